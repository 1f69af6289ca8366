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
// overwrites that grow, deletes, records larger than a chunk overwritten
// in place, enough new keys to grow every table, and garbage past what
// would compact the shards do not change what the view returns; the store
// itself sees all of them. After Release, writes work as before.
func TestFrozenViewDoesNotChange(t *testing.T) {
	s := store.NewArena()
	want := map[string]string{}
	for i := range 5000 {
		k, v := fmt.Sprintf("k%d", i), fmt.Sprintf("v%d-%s", i, strings.Repeat("x", i%50))
		s.Put(k, v)
		want[k] = v
	}
	for i := range 20 { // larger than a chunk: each takes a chunk of its own
		k, v := fmt.Sprintf("big%d", i), strings.Repeat(string(rune('A'+i)), 100<<10)
		s.Put(k, v)
		want[k] = v
	}
	f := s.Freeze()
	require.Equal(t, 5020, f.Len())
	model := maps.Clone(want)
	for round := range 2 { // the first overwrite takes a record, the second goes in place
		for i := range 20 {
			k, v := fmt.Sprintf("big%d", i), strings.Repeat(string(rune('a'+round)), 100<<10)
			s.Put(k, v)
			model[k] = v
		}
	}
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
	for round := range 3 { // garbage past half of every arena, which would compact it
		for i := range 20000 {
			k := fmt.Sprintf("n%d", i)
			v := strings.Repeat(string(rune('a'+round)), 100+round*50)
			s.Put(k, v)
			model[k] = v
		}
	}
	require.Equal(t, want, frozenContent(f), "the view changed")
	require.Equal(t, 5020, f.Len())
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

// TestFrozenViewCostsOneRecordPerKeyOverwritten: while a view lives, a key
// overwritten many times takes one record more than before (the first
// overwrite cannot go in place, the later ones can), not one a write; and
// the shards compact what the view kept once it is released.
func TestFrozenViewCostsOneRecordPerKeyOverwritten(t *testing.T) {
	acct := new(store.Account)
	s := store.NewArenaIn(acct)
	const keys = 200000
	value := strings.Repeat("v", 200)
	for i := range keys {
		s.Put(fmt.Sprintf("k%d", i), value)
	}
	before := acct.Bytes()
	f := s.Freeze()
	for round := range 5 {
		v := strings.Repeat(string(rune('a'+round)), 200)
		for i := range keys {
			s.Put(fmt.Sprintf("k%d", i), v)
		}
	}
	during := acct.Bytes()
	t.Logf("bytes: %d before the view, %d after 5 overwrites of every key under it", before, during)
	require.Less(t, during, before*5/2, "overwrites under a view took more than one record a key")
	view := frozenContent(f)
	require.Len(t, view, keys)
	for k, v := range view {
		require.Equal(t, value, v, k)
	}
	got, _ := store.Get(s, "k7")
	require.Equal(t, strings.Repeat("e", 200), got)

	acct.SetLimit(before) // tight: Release compacts at a quarter of garbage
	f.Release()
	after := acct.Bytes()
	t.Logf("bytes after Release: %d", after)
	require.Less(t, after, before*6/5, "Release left the garbage the view kept")
	got, _ = store.Get(s, "k7")
	require.Equal(t, strings.Repeat("e", 200), got)
}

// TestReleaseCompactsWhatTheViewKept: with no limit, a store whose keys
// were each overwritten three times by larger values under a view (three
// dead records a key, well over half its bytes) compacts once the view is
// released.
func TestReleaseCompactsWhatTheViewKept(t *testing.T) {
	acct := new(store.Account)
	s := store.NewArenaIn(acct)
	const keys = 100000
	for i := range keys {
		s.Put(fmt.Sprintf("k%d", i), strings.Repeat("a", 100))
	}
	f := s.Freeze()
	for _, n := range []int{150, 200, 250} {
		for i := range keys {
			s.Put(fmt.Sprintf("k%d", i), strings.Repeat("b", n))
		}
	}
	during := acct.Bytes()
	f.Release()
	after := acct.Bytes()
	t.Logf("bytes: %d under the view, %d after Release", during, after)
	require.Less(t, after, during/2, "Release left the garbage")
}

// TestTwoViewsAtOnce: records added between two Freezes are the second
// view's, and are not overwritten in place while it lives, even after the
// first is released.
func TestTwoViewsAtOnce(t *testing.T) {
	s := store.NewArena()
	for i := range 3000 {
		s.Put(fmt.Sprintf("k%d", i), "first-value")
	}
	first := s.Freeze()
	for i := range 3000 {
		s.Put(fmt.Sprintf("k%d", i), "second-val") // a new record each: the first view holds the old ones
	}
	second := s.Freeze()
	for i := range 3000 {
		s.Put(fmt.Sprintf("k%d", i), "third-valu") // fits the second's records: only a view stops it going in place
	}
	check := func(f *store.Frozen, want string) {
		t.Helper()
		view := frozenContent(f)
		require.Len(t, view, 3000)
		for k, v := range view {
			require.Equal(t, want, v, k)
		}
	}
	check(first, "first-value")
	check(second, "second-val")
	first.Release()
	for i := range 3000 {
		s.Put(fmt.Sprintf("k%d", i), "fourth-val")
	}
	check(second, "second-val")
	second.Release()
	got, _ := store.Get(s, "k9")
	require.Equal(t, "fourth-val", got)
}

// TestTightAccountCompactsSooner: values that grow on every overwrite
// leave their old records as garbage. Unbounded, a store lets it reach
// half its bytes before it compacts; past three quarters of its
// Account's limit, a quarter. Both are measured against the store's bytes
// before any key was overwritten.
func TestTightAccountCompactsSooner(t *testing.T) {
	keys := make([]string, 100000)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	peak := func(limit int64) (first, peak int64) {
		acct := new(store.Account)
		acct.SetLimit(limit)
		s := store.NewArenaIn(acct)
		for round := range 8 {
			v := strings.Repeat("x", 100+round)
			for _, k := range keys {
				s.Put(k, v)
			}
			if round == 0 {
				first = acct.Bytes()
			}
			peak = max(peak, acct.Bytes())
		}
		return first, peak
	}
	first, loose := peak(0)
	_, tight := peak(1) // always past three quarters
	t.Logf("bytes with every key written once: %d; peak: %d unbounded, %d tight", first, loose, tight)
	require.Greater(t, loose, first*8/5, "unbounded, the store compacts at half its bytes")
	require.Less(t, tight, first*7/5, "a tight store compacts at a quarter")
}

// TestViewsComeAndGoWhileWriting: views taken and released in turn, each
// read whole, while writers overwrite every key with values that grow (so
// shards compact at each Release) and delete some; run under -race. Each
// value a view returns belongs to its key, and a key's version never
// changes between two reads of the same view.
func TestViewsComeAndGoWhileWriting(t *testing.T) {
	s := store.NewArena()
	const keys = 4000
	for i := range keys {
		s.Put(fmt.Sprintf("k%d", i), fmt.Sprintf("k%d=0", i))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v := 1; ; v++ {
				for i := w; i < keys; i += 2 {
					select {
					case <-stop:
						return
					default:
					}
					k := fmt.Sprintf("k%d", i)
					if (i+v)%7 == 0 {
						s.Delete(k)
						continue
					}
					s.Put(k, fmt.Sprintf("%s=%d%s", k, v, strings.Repeat("x", v%64)))
				}
			}
		}()
	}
	for range 30 {
		f := s.Freeze()
		first := frozenContent(f)
		for k, v := range first {
			require.True(t, strings.HasPrefix(v, k+"="), "key %s holds %q", k, v)
		}
		require.Equal(t, first, frozenContent(f), "the view changed between two reads")
		f.Release()
	}
	close(stop)
	wg.Wait()
}
