package logcache_test

import (
	"bytes"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/kvs/replica/logcache"
)

// countingStore is hashicorp/raft's in-memory log store, counting reads.
type countingStore struct {
	*raft.InmemStore
	reads atomic.Int64
}

func (s *countingStore) GetLog(idx uint64, log *raft.Log) error {
	s.reads.Add(1)
	return s.InmemStore.GetLog(idx, log)
}

func entry(idx uint64, size int) *raft.Log {
	return &raft.Log{Index: idx, Term: 1, Type: raft.LogCommand, Data: bytes.Repeat([]byte{byte(idx)}, size)}
}

func requireEntry(t *testing.T, c *logcache.Cache, idx uint64, size int) {
	t.Helper()
	var l raft.Log
	require.NoError(t, c.GetLog(idx, &l))
	require.Equal(t, idx, l.Index)
	require.Equal(t, bytes.Repeat([]byte{byte(idx)}, size), l.Data)
}

// TestLogCacheServesRecentEntriesWithinItsCount: the newest entries, up
// to the cache's count, are read without the store; older ones from it.
func TestLogCacheServesRecentEntriesWithinItsCount(t *testing.T) {
	st := &countingStore{InmemStore: raft.NewInmemStore()}
	c := logcache.New(st, 4, logcache.NewBudget(0))
	for i := uint64(1); i <= 10; i++ {
		require.NoError(t, c.StoreLogs([]*raft.Log{entry(i, 100)}))
	}
	for i := uint64(7); i <= 10; i++ {
		requireEntry(t, c, i, 100)
	}
	require.Zero(t, st.reads.Load(), "the 4 newest entries were read from the store")
	requireEntry(t, c, 6, 100)
	require.Equal(t, int64(1), st.reads.Load())
}

// TestLogCachesStayWithinTheirBudget: two groups' caches share a budget
// of 10 entries' bytes; whichever stores, what they hold together never
// passes it, and every entry still reads back whole (from the store once
// evicted). An entry larger than the whole budget is not kept.
func TestLogCachesStayWithinTheirBudget(t *testing.T) {
	const size = 1000
	budget := logcache.NewBudget(10 * (size + 96))
	a := logcache.New(raft.NewInmemStore(), 1024, budget)
	b := logcache.New(raft.NewInmemStore(), 1024, budget)
	for i := uint64(1); i <= 50; i++ {
		c := a
		if i%3 == 0 {
			c = b
		}
		require.NoError(t, c.StoreLogs([]*raft.Log{entry(i, size)}))
		require.LessOrEqual(t, budget.Held(), budget.Limit(), "after entry %d", i)
		require.Positive(t, budget.Held())
	}
	for i := uint64(1); i <= 50; i++ {
		c := a
		if i%3 == 0 {
			c = b
		}
		requireEntry(t, c, i, size)
	}
	require.NoError(t, a.StoreLogs([]*raft.Log{entry(51, 20*size)}))
	require.LessOrEqual(t, budget.Held(), budget.Limit())
	requireEntry(t, a, 51, 20*size)
}

// TestLogCacheGivesBackWhatItHeld: DeleteRange and Drop empty the cache
// and give its bytes back; a log cut and written again from an earlier
// index is served as written the second time.
func TestLogCacheGivesBackWhatItHeld(t *testing.T) {
	budget := logcache.NewBudget(0)
	st := raft.NewInmemStore()
	c := logcache.New(st, 16, budget)
	for i := uint64(1); i <= 8; i++ {
		require.NoError(t, c.StoreLogs([]*raft.Log{entry(i, 10)}))
	}
	require.Equal(t, int64(8*(10+96)), budget.Held())
	require.NoError(t, c.DeleteRange(5, 8))
	require.Zero(t, budget.Held())
	require.NoError(t, c.StoreLogs([]*raft.Log{entry(5, 30), entry(6, 30)}))
	requireEntry(t, c, 5, 30)
	requireEntry(t, c, 4, 10)
	c.Drop()
	require.Zero(t, budget.Held())
	requireEntry(t, c, 6, 30)
}
