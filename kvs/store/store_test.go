package store_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
)

// forEachStore runs f as a subtest on a fresh store of every kind.
func forEachStore(t *testing.T, f func(t *testing.T, s store.Store)) {
	for _, name := range store.Kinds {
		t.Run(name, func(t *testing.T) {
			s, ok := store.New(name)
			require.True(t, ok)
			f(t, s)
		})
	}
}

func TestStoreBasics(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		_, ok := store.Get(s, "a")
		require.False(t, ok)
		dst, ok := s.AppendGet([]byte("x"), "a")
		require.False(t, ok)
		require.Equal(t, "x", string(dst), "a miss leaves dst alone")

		s.Put("a", "1")
		s.Put("", "empty key")
		s.Put("b", "")
		dst, ok = s.AppendGet([]byte("x"), "a")
		require.True(t, ok)
		require.Equal(t, "x1", string(dst))
		v, ok := store.Get(s, "")
		require.True(t, ok)
		require.Equal(t, "empty key", v)
		v, ok = store.Get(s, "b")
		require.True(t, ok, "an empty value is present")
		require.Empty(t, v)
		require.Equal(t, 3, s.Len())

		s.Put("a", "a longer value than before")
		v, _ = store.Get(s, "a")
		require.Equal(t, "a longer value than before", v)
		s.Put("a", "short")
		v, _ = store.Get(s, "a")
		require.Equal(t, "short", v)

		s.Delete("a")
		s.Delete("never there")
		_, ok = store.Get(s, "a")
		require.False(t, ok)
		require.Equal(t, 2, s.Len())
		s.Put("a", "back")
		v, _ = store.Get(s, "a")
		require.Equal(t, "back", v)
		require.Equal(t, 3, s.Len())
	})
}

// TestStoreCopiesArguments: the service passes keys and values that alias
// buffers it reuses, so a store must not keep them.
func TestStoreCopiesArguments(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		buf := []byte("key1value1")
		s.Put(aliased(buf[:4]), aliased(buf[4:]))
		copy(buf, "XXXXXXXXXX")
		v, ok := store.Get(s, "key1")
		require.True(t, ok)
		require.Equal(t, "value1", v)
	})
}

// aliased returns b as a string that shares b's bytes, as the server's
// decoded requests do.
func aliased(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// TestStoreMatchesMap drives each store and a Go map with the same random
// puts (of varying sizes, so records move and arenas compact), deletes and
// gets over enough keys to grow the tables several times.
func TestStoreMatchesMap(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		rng := rand.New(rand.NewPCG(7, 7))
		model := map[string]string{}
		const keys = 20000
		for i := range 400000 {
			k := strconv.Itoa(rng.IntN(keys))
			switch r := rng.IntN(10); {
			case r < 4:
				v := strings.Repeat(string(rune('a'+i%26)), rng.IntN(200))
				s.Put(k, v)
				model[k] = v
			case r < 5:
				s.Delete(k)
				delete(model, k)
			default:
				got, ok := store.Get(s, k)
				want, wantOK := model[k]
				require.Equal(t, wantOK, ok, "presence of %q at op %d", k, i)
				require.Equal(t, want, got, "value of %q at op %d", k, i)
			}
		}
		require.Equal(t, len(model), s.Len())
		for k, want := range model {
			got, ok := store.Get(s, k)
			require.True(t, ok, k)
			require.Equal(t, want, got, k)
		}
		ranged := map[string]string{}
		s.Range(func(k string, v []byte) bool {
			_, dup := ranged[k]
			require.False(t, dup, "Range gave %q twice", k)
			ranged[k] = string(v)
			return true
		})
		require.Equal(t, model, ranged)
		calls := 0
		s.Range(func(string, []byte) bool { calls++; return calls < 3 })
		require.Equal(t, 3, calls, "Range goes on after fn returns false")
	})
}

// TestStoreReadsAreAtomic: readers never see part of one value and part of
// another while writers overwrite keys with values of one repeated byte,
// in place and (when the size changes) by moving them. Run with -race.
func TestStoreReadsAreAtomic(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		const keys = 64
		for k := range keys {
			s.Put(fmt.Sprint(k), "a")
		}
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 1))
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					k := fmt.Sprint(rng.IntN(keys))
					s.Put(k, strings.Repeat(string(rune('a'+i%26)), 1+rng.IntN(300)))
					if i%97 == 0 {
						s.Delete(k)
						s.Put(k, "z")
					}
				}
			}()
		}
		var buf []byte
		for i := range 50000 {
			var ok bool
			buf, ok = s.AppendGet(buf[:0], fmt.Sprint(i%keys))
			if !ok {
				continue // between a delete and its re-put
			}
			require.NotEmpty(t, buf)
			require.Equal(t, len(buf), bytes.Count(buf, buf[:1]), "torn value %q", buf)
		}
		close(stop)
		wg.Wait()
	})
}

func TestNewStoreUnknown(t *testing.T) {
	_, ok := store.New("btree")
	require.False(t, ok)
}

// TestApplyBatchMatchesMap drives ApplyBatch with random batches over few
// keys, so that batches hold several ops on one key and most lookups
// probe empty slots, and checks every result against a Go map applying
// the same ops in order: ops on one key must keep their batch order.
func TestApplyBatchMatchesMap(t *testing.T) {
	s := store.NewArena()
	model := map[string]string{}
	rng := rand.New(rand.NewPCG(11, 11))
	for round := range 3000 {
		keys := 1 + rng.IntN(5000)
		ops := make([]wire.Op, batchLen(rng, 300))
		want := make([]wire.Result, len(ops))
		for i := range ops {
			k := strconv.Itoa(rng.IntN(keys))
			switch r := rng.IntN(10); {
			case r < 3:
				v := strings.Repeat(string(rune('a'+i%26)), rng.IntN(150))
				ops[i] = wire.Op{Code: wire.OpPut, Key: k, Value: v}
				model[k] = v
			case r < 4:
				ops[i] = wire.Op{Code: wire.OpDelete, Key: k}
				delete(model, k)
			default:
				ops[i] = wire.Op{Code: wire.OpGet, Key: k}
				if v, ok := model[k]; ok {
					want[i] = wire.Result{Status: wire.StatusOK, Value: v}
				} else {
					want[i] = wire.Result{Status: wire.StatusNotFound}
				}
			}
		}
		got := make([]wire.Result, len(ops))
		s.ApplyBatch(ops, got, &store.Values{Limit: 1 << 30})
		require.Equal(t, want, got, "round %d", round)
	}
	require.Equal(t, len(model), s.Len())
}

// batchLen is a random batch length up to most: in half the draws a few
// ops, which the arena applies one by one rather than sorted by shard.
func batchLen(rng *rand.Rand, most int) int {
	if rng.IntN(2) == 0 {
		return 1 + rng.IntN(8)
	}
	return 1 + rng.IntN(most)
}
