package raftstore

import (
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// callRecorder is an in-memory store that records the entries of each
// StoreLogs call made to it. It stores copies, as checkedLog requires.
type callRecorder struct {
	*raft.InmemStore
	calls [][]uint64 // the indexes of each call's entries
	bytes []int      // each call's data and extensions
}

func (r *callRecorder) StoreLogs(logs []*raft.Log) error {
	var idx []uint64
	n := 0
	copies := make([]*raft.Log, len(logs))
	for i, l := range logs {
		idx = append(idx, l.Index)
		n += len(l.Data) + len(l.Extensions)
		c := *l
		c.Extensions = append([]byte(nil), l.Extensions...) // checkedLog reuses its own
		copies[i] = &c
	}
	r.calls, r.bytes = append(r.calls, idx), append(r.bytes, n)
	return r.InmemStore.StoreLogs(copies)
}

// TestStoreLogsCallsStayWithinTheirBound: a batch larger than
// maxStoreCallBytes reaches the store under it in calls within the bound
// that cover it in order, and every entry reads back checked; a smaller
// batch is one call.
func TestStoreLogsCallsStayWithinTheirBound(t *testing.T) {
	rec := &callRecorder{InmemStore: raft.NewInmemStore()}
	c := &checkedLog{Store: rec, fileOf: func(uint64) string { return "memory" }}
	storeChecked(t, c, 1, 100, 1<<10) // 100 KiB: one call
	require.Len(t, rec.calls, 1)

	rec.calls, rec.bytes = nil, nil
	storeChecked(t, c, 101, 200, 300<<10) // 100 entries of 300 KiB, 29 MiB
	require.Greater(t, len(rec.calls), 1, "a 29 MiB batch went in one call")
	next := uint64(101)
	for i, call := range rec.calls {
		require.LessOrEqual(t, rec.bytes[i], maxStoreCallBytes, "call %d", i)
		for _, idx := range call {
			require.Equal(t, next, idx, "the calls do not cover the batch in order")
			next++
		}
	}
	require.Equal(t, uint64(201), next)
	t.Logf("a batch of 100 entries of 300 KiB: %d calls", len(rec.calls))

	// An entry larger than the bound goes alone.
	rec.calls, rec.bytes = nil, nil
	storeChecked(t, c, 201, 203, maxStoreCallBytes+1)
	require.Len(t, rec.calls, 3)

	for i := uint64(1); i <= 203; i++ {
		var l raft.Log
		require.NoError(t, c.GetLog(i, &l), "entry %d", i)
	}
}
