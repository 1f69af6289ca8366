package store_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
)

// applyAtFunc is the shape of store.ApplyAt, so that the check below can
// be run against a planted wrong one.
type applyAtFunc func(s store.Store, ops []wire.Op, at []int32, results []wire.Result, vals *store.Values)

// checkApplyAt applies random batches over few keys, each through apply
// with a random subset of its ops (sometimes nil: all of them, sometimes
// with an op that fails its check), and compares every result with a Go
// map applying the chosen ops in order. Results of ops left out must keep
// what they held.
func checkApplyAt(s store.Store, apply applyAtFunc, seed uint64) error {
	model := map[string]string{}
	untouched := wire.Result{Status: wire.StatusUnavail, Value: "untouched"}
	rng := rand.New(rand.NewPCG(seed, seed))
	for round := range 1500 {
		keys := 1 + rng.IntN(2000)
		ops := make([]wire.Op, batchLen(rng, 200))
		for i := range ops {
			k := strconv.Itoa(rng.IntN(keys))
			switch r := rng.IntN(10); {
			case r < 3:
				ops[i] = wire.Op{Code: wire.OpPut, Key: k, Value: fmt.Sprintf("v%d-%d", round, i)}
			case r < 4:
				ops[i] = wire.Op{Code: wire.OpDelete, Key: k}
			default:
				ops[i] = wire.Op{Code: wire.OpGet, Key: k}
			}
		}
		if round%7 == 0 {
			ops[rng.IntN(len(ops))].Key = "" // fails wire.Op.Check
		}
		var at []int32
		if round%5 != 0 {
			at = []int32{}
			for i := range ops {
				if rng.IntN(3) > 0 {
					at = append(at, int32(i))
				}
			}
		}
		want := make([]wire.Result, len(ops))
		for i := range want {
			want[i] = untouched
		}
		chosen := at
		if at == nil {
			chosen = make([]int32, len(ops))
			for i := range chosen {
				chosen[i] = int32(i)
			}
		}
		for _, i := range chosen {
			op := ops[i]
			switch {
			case op.Check() != wire.StatusOK:
				want[i] = wire.Result{Status: op.Check()}
			case op.Code == wire.OpPut:
				model[op.Key] = op.Value
				want[i] = wire.Result{Status: wire.StatusOK}
			case op.Code == wire.OpDelete:
				delete(model, op.Key)
				want[i] = wire.Result{Status: wire.StatusOK}
			default:
				if v, ok := model[op.Key]; ok {
					want[i] = wire.Result{Status: wire.StatusOK, Value: v}
				} else {
					want[i] = wire.Result{Status: wire.StatusNotFound}
				}
			}
		}
		got := make([]wire.Result, len(ops))
		for i := range got {
			got[i] = untouched
		}
		apply(s, ops, at, got, &store.Values{Limit: 1 << 30})
		for i := range ops {
			if got[i] != want[i] {
				return fmt.Errorf("round %d: op %d %+v answered %+v, want %+v", round, i, ops[i], got[i], want[i])
			}
		}
	}
	if s.Len() != len(model) {
		return fmt.Errorf("store holds %d keys, the model %d", s.Len(), len(model))
	}
	return nil
}

// TestApplyAtMatchesMap: ApplyAt applies exactly the ops it is given the
// indexes of, in order, on every kind of store (the arena through its
// Batcher, the others op by op), and the check catches an ApplyAt planted
// to apply the whole batch.
func TestApplyAtMatchesMap(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		require.NoError(t, checkApplyAt(s, store.ApplyAt, 21))
	})
	planted := func(s store.Store, ops []wire.Op, _ []int32, results []wire.Result, vals *store.Values) {
		store.Apply(s, ops, results, vals)
	}
	require.Error(t, checkApplyAt(store.NewArena(), planted, 21), "an ApplyAt that ignores its indexes")
}
