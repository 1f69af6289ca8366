package store_test

import (
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
)

func putIf(cond wire.Cond, key, expect, value string) wire.Op {
	return wire.Op{Code: wire.OpPutIf, Cond: cond, Key: key, Expect: expect, Value: value}
}

// TestPutIf: each condition on a present and an absent key, through the
// store's PutIf, store.Apply op by op and, for the Arena, its batch path.
func TestPutIf(t *testing.T) {
	cases := []struct {
		name    string
		before  *string // nil: absent
		op      wire.Op
		want    wire.Result
		after   *string
		applied bool
	}{
		{"cas hit", ptr("1"), putIf(wire.CondEqual, "k", "1", "2"), wire.Result{Status: wire.StatusOK, Value: "1"}, ptr("2"), true},
		{"cas miss", ptr("1"), putIf(wire.CondEqual, "k", "0", "2"), wire.Result{Status: wire.StatusMismatch, Value: "1"}, ptr("1"), false},
		{"cas absent", nil, putIf(wire.CondEqual, "k", "", "2"), wire.Result{Status: wire.StatusMismatchNotFound}, nil, false},
		{"cas empty value", ptr(""), putIf(wire.CondEqual, "k", "", "2"), wire.Result{Status: wire.StatusOK}, ptr("2"), true},
		{"nx stores", nil, putIf(wire.CondAbsent, "k", "", "v"), wire.Result{Status: wire.StatusNotFound}, ptr("v"), true},
		{"nx refuses", ptr("held"), putIf(wire.CondAbsent, "k", "", "v"), wire.Result{Status: wire.StatusMismatch, Value: "held"}, ptr("held"), false},
		{"xx stores", ptr("old"), putIf(wire.CondPresent, "k", "", "a much longer value than the old one"), wire.Result{Status: wire.StatusOK, Value: "old"}, ptr("a much longer value than the old one"), true},
		{"xx refuses", nil, putIf(wire.CondPresent, "k", "", "v"), wire.Result{Status: wire.StatusMismatchNotFound}, nil, false},
		{"getset present", ptr("a long old value"), putIf(wire.CondAlways, "k", "", "s"), wire.Result{Status: wire.StatusOK, Value: "a long old value"}, ptr("s"), true},
		{"getset absent", nil, putIf(wire.CondAlways, "k", "", "v"), wire.Result{Status: wire.StatusNotFound}, ptr("v"), true},
	}
	paths := map[string]func(s store.Store, op wire.Op) wire.Result{
		"PutIf": func(s store.Store, op wire.Op) wire.Result { return s.PutIf(&op, &store.Values{Limit: 1 << 20}) },
		"Apply": func(s store.Store, op wire.Op) wire.Result {
			res := make([]wire.Result, 2)
			// A get of another key in the same batch keeps Arena off its
			// batch path only when some op is invalid: the empty key is.
			store.Apply(s, []wire.Op{op, {Code: wire.OpGet}}, res, &store.Values{Limit: 1 << 20})
			require.Equal(t, wire.StatusBadKey, res[1].Status)
			return res[0]
		},
		"batch": func(s store.Store, op wire.Op) wire.Result {
			res := make([]wire.Result, 2)
			store.Apply(s, []wire.Op{op, {Code: wire.OpGet, Key: "k"}}, res, &store.Values{Limit: 1 << 20})
			return res[0]
		},
	}
	for pathName, apply := range paths {
		t.Run(pathName, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, s store.Store) {
				for _, c := range cases {
					s.Delete("k")
					if c.before != nil {
						s.Put("k", *c.before)
					}
					require.Equal(t, c.want, apply(s, c.op), c.name)
					require.Equal(t, c.applied, c.want.Status.Applied(), c.name)
					v, ok := store.Get(s, "k")
					if c.after == nil {
						require.False(t, ok, c.name)
					} else {
						require.True(t, ok, c.name)
						require.Equal(t, *c.after, v, c.name)
					}
				}
			})
		})
	}
}

func ptr(s string) *string { return &s }

// TestPutIfOverTheValuesLimit: a conditional put whose old value would take
// the batch's values past their limit is refused and changes nothing.
func TestPutIfOverTheValuesLimit(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		old := strings.Repeat("o", 100)
		s.Put("k", old)
		for _, op := range []wire.Op{putIf(wire.CondAlways, "k", "", "new"), putIf(wire.CondEqual, "k", old, "new")} {
			res := s.PutIf(&op, &store.Values{Limit: 99})
			require.Equal(t, wire.StatusTooLarge, res.Status)
			v, _ := store.Get(s, "k")
			require.Equal(t, old, v, "not applied")
		}
		op := putIf(wire.CondAlways, "absent", "", "v")
		require.Equal(t, wire.StatusNotFound, s.PutIf(&op, &store.Values{}).Status, "an absent key needs no room")
	})
}

// TestPutIfCounter: goroutines increment one counter with compare-and-set
// loops, each retrying from the value a failed CAS returned; the counter
// ends at exactly the number of increments. Half the goroutines go
// through store.Apply in batches (the Arena's batch path), half through
// PutIf, and others put and read unrelated keys of the same shards
// meanwhile.
func TestPutIfCounter(t *testing.T) {
	const workers, each = 8, 300
	forEachStore(t, func(t *testing.T, s store.Store) {
		s.Put("n", "0")
		var wg sync.WaitGroup
		stop := make(chan struct{})
		go func() { // noise on other keys
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				s.Put("noise"+strconv.Itoa(i%64), strconv.Itoa(i))
			}
		}()
		failed := make([]int, workers)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cur := "0"
				for range each {
					for {
						op := putIf(wire.CondEqual, "n", cur, "")
						n, err := strconv.Atoi(cur)
						if err != nil {
							panic(err)
						}
						op.Value = strconv.Itoa(n + 1)
						var res wire.Result
						if w%2 == 0 {
							res = s.PutIf(&op, &store.Values{Limit: 1 << 10})
						} else {
							rs := make([]wire.Result, 2)
							store.Apply(s, []wire.Op{{Code: wire.OpGet, Key: "noise1"}, op}, rs, &store.Values{Limit: 1 << 10})
							res = rs[1]
						}
						if res.Status == wire.StatusOK {
							cur = op.Value
							break
						}
						if res.Status != wire.StatusMismatch {
							t.Errorf("CAS answered %s", res.Status)
							return
						}
						cur = strings.Clone(res.Value)
						failed[w]++
					}
				}
			}()
		}
		wg.Wait()
		close(stop)
		v, _ := store.Get(s, "n")
		require.Equal(t, strconv.Itoa(workers*each), v)
		total := 0
		for _, f := range failed {
			total += f
		}
		t.Logf("%d increments, %d failed CAS retried", workers*each, total)
	})
}
