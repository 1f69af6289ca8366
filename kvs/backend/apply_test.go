package backend

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/kvs/stats"
	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
)

// readBig applies a batch of 70 gets of one 1 MiB value (more than a
// frame holds) through an Applier keeping a reply budget of limit bytes,
// and returns how many were answered with the value.
func readBig(t *testing.T, limit int64) (served int) {
	t.Helper()
	st, ok := store.New(store.DefaultKind)
	require.True(t, ok)
	big := strings.Repeat("x", wire.MaxValueBytes)
	a := NewApplier(&stats.Stats{}, NewBudget(limit))
	a.apply(st, []wire.Op{{Code: wire.OpPut, Key: "big", Value: big}}, make([]wire.Result, 1), nil)
	ops := make([]wire.Op, 70)
	for i := range ops {
		ops[i] = wire.Op{Code: wire.OpGet, Key: "big"}
	}
	results := make([]wire.Result, len(ops))
	cl := &Call{Conn: NewBudget(limit)}
	a.apply(st, ops, results, cl)
	for i, r := range results {
		switch r.Status {
		case wire.StatusOK:
			require.Equal(t, served, i, "the values read are the first gets'")
			require.Equal(t, big, r.Value)
			served++
		default:
			require.Equal(t, wire.StatusTooLarge, r.Status, "get %d", i)
		}
	}
	a.Release(cl)
	return served
}

// TestOneBatchReadsAtMostHalfTheReplyBudget: a batch reads values up to
// half the server's reply budget, so that no one batch held unread takes
// the server over alone, and the gets past that answer TooLarge; a value
// of the largest size is read whatever the budget; and a frame's worth at
// the most.
func TestOneBatchReadsAtMostHalfTheReplyBudget(t *testing.T) {
	require.Equal(t, 8, readBig(t, 16<<20), "half of a 16 MiB budget: eight 1 MiB values")
	require.Equal(t, 1, readBig(t, 512<<10), "one value of the largest size, under a smaller budget")
	require.Equal(t, maxReplyValues/wire.MaxValueBytes, readBig(t, 1<<40), "a frame's worth under a budget larger than a frame")
}
