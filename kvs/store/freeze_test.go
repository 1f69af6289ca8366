package store_test

import (
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/kvs/store"
)

func frozenContent(f *store.Frozen) map[string]string {
	m := map[string]string{}
	f.Range(func(k string, v []byte) bool {
		m[strings.Clone(k)] = string(v)
		return true
	})
	return m
}

// TestFrozenViewDoesNotChange: after Freeze, overwrites that fit in place,
// overwrites that grow, deletes, enough new keys to grow every table, and
// enough garbage to compact do not change what the view returns; the
// store itself sees all of them. After Release, writes work as before.
func TestFrozenViewDoesNotChange(t *testing.T) {
	s := store.NewArena()
	want := map[string]string{}
	for i := range 5000 {
		k, v := fmt.Sprintf("k%d", i), fmt.Sprintf("v%d-%s", i, strings.Repeat("x", i%50))
		s.Put(k, v)
		want[k] = v
	}
	f := s.Freeze()
	require.Equal(t, 5000, f.Len())
	model := maps.Clone(want)
	for i := range 5000 {
		k := fmt.Sprintf("k%d", i)
		switch i % 4 {
		case 0:
			s.Put(k, "y") // fits in place
			model[k] = "y"
		case 1:
			v := strings.Repeat("z", 200) // grows: a new record
			s.Put(k, v)
			model[k] = v
		case 2:
			s.Delete(k)
			delete(model, k)
		}
	}
	for i := range 20000 { // grow the tables, several times
		k := fmt.Sprintf("n%d", i)
		s.Put(k, k)
		model[k] = k
	}
	for round := range 3 { // garbage past half of every arena: compaction
		for i := range 20000 {
			k := fmt.Sprintf("n%d", i)
			v := strings.Repeat(string(rune('a'+round)), 100+round*50)
			s.Put(k, v)
			model[k] = v
		}
	}
	require.Equal(t, want, frozenContent(f), "the view changed")
	require.Equal(t, 5000, f.Len())
	for k, v := range model {
		got, ok := store.Get(s, k)
		require.True(t, ok, k)
		require.Equal(t, v, got, k)
	}
	require.Equal(t, len(model), s.Len())
	f.Release()

	s.Put("k0", "w") // in place again
	got, _ := store.Get(s, "k0")
	require.Equal(t, "w", got)
}

// TestFrozenRangeWhileWriting reads a view while writers overwrite its
// keys; run under -race. Every pair the view returns is the one frozen.
func TestFrozenRangeWhileWriting(t *testing.T) {
	s := store.NewArena()
	for i := range 2000 {
		s.Put(fmt.Sprintf("k%d", i), "old")
	}
	f := s.Freeze()
	defer f.Release()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				k := fmt.Sprintf("k%d", (i*7+w)%2000)
				if i%3 == 0 {
					s.Delete(k)
				} else {
					s.Put(k, "new")
				}
			}
		}()
	}
	for range 5 {
		n := 0
		f.Range(func(k string, v []byte) bool {
			require.Equal(t, "old", string(v), k)
			n++
			return true
		})
		require.Equal(t, 2000, n)
	}
	wg.Wait()
}
