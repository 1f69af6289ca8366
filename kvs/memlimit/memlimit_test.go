package memlimit

import (
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestShares: the heap takes a quarter of max-memory, at least 128 MiB
// and at most half, and the stores what the heap and the Reserve leave.
func TestShares(t *testing.T) {
	for _, m := range []int64{Min, 1 << 30, 24 << 30} {
		stores, heap := Shares(m)
		require.Equal(t, m-Reserve, stores+heap)
		require.GreaterOrEqual(t, heap, min(int64(128<<20), m/2))
		require.LessOrEqual(t, heap, m/2)
	}
	stores, heap := Shares(1 << 30)
	require.Equal(t, int64(1<<30)/4, heap)
	require.Equal(t, int64(1<<30)/4*3-Reserve, stores)
}

// TestFollowStores: the Go limit is max-memory less the Reserve and the
// stores, and never under the heap's share.
func TestFollowStores(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	var held atomic.Int64
	held.Store(100 << 20)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { FollowStores(stop, 1<<30, held.Load); close(done) }()
	require.Eventually(t, func() bool { return debug.SetMemoryLimit(-1) == 1<<30-Reserve-100<<20 }, 5*time.Second, time.Millisecond)
	held.Store(1 << 30)
	_, heap := Shares(1 << 30)
	require.Eventually(t, func() bool { return debug.SetMemoryLimit(-1) == heap }, 5*time.Second, time.Millisecond)
	close(stop)
	<-done
}

// TestNextEvery: the follower looks every Every while the limit moves by a
// 256th of max-memory or more, either way, and backs off to EveryQuiet
// while it holds still.
func TestNextEvery(t *testing.T) {
	const m = 1 << 30
	require.Equal(t, Every, nextEvery(EveryQuiet, m/256, m), "grown by a 256th")
	require.Equal(t, Every, nextEvery(EveryQuiet, -m/256, m), "shrunk by a 256th")
	require.Equal(t, 2*Every, nextEvery(Every, m/256-1, m), "moved by less: half as often")
	require.Equal(t, 2*Every, nextEvery(Every, 0, m))
	require.Equal(t, EveryQuiet, nextEvery(EveryQuiet, 0, m), "no less often than EveryQuiet")
	every := Every
	for range 10 {
		every = nextEvery(every, 0, m)
	}
	require.Equal(t, EveryQuiet, every)
}
