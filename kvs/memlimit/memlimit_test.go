package memlimit

import (
	"runtime"
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

// TestGCPercent: the collector's goal, live bytes and GOGC percent of
// them again, is at least the floor, never at a GOGC under 100 or over
// maxGCPercent.
func TestGCPercent(t *testing.T) {
	const floor = 64 << 20
	for _, live := range []int64{1 << 20, 4 << 20, 20 << 20, 31 << 20} {
		p := gcPercent(live, floor)
		require.GreaterOrEqual(t, live+live*int64(p)/100, int64(floor), "live %d: GOGC %d", live, p)
		require.Less(t, live+live*int64(p-1)/100, int64(floor), "live %d: GOGC %d is more than needed", live, p)
	}
	require.Equal(t, 100, gcPercent(32<<20, floor), "at half the floor, the default reaches it")
	require.Equal(t, 100, gcPercent(1<<30, floor), "over the floor: the default")
	require.Equal(t, maxGCPercent, gcPercent(0, floor))
	require.Equal(t, maxGCPercent, gcPercent(1<<10, floor))
}

// TestGCFloor: a quarter of the heap's share, at most MaxGCFloor.
func TestGCFloor(t *testing.T) {
	require.Equal(t, int64(32<<20), GCFloor(Min), "128 MiB of heap")
	require.Equal(t, int64(MaxGCFloor), GCFloor(1<<30))
	require.Equal(t, int64(MaxGCFloor), GCFloor(24<<30))
}

// TestKeepGCFloor: with a small live heap, GOGC is raised so that the
// goal is the floor, kept so across collections, and set back to 100
// when stopped.
func TestKeepGCFloor(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	const floor = 1 << 30 // far over this test's live heap
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { KeepGCFloor(stop, floor); close(done) }()
	gogc := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }
	require.Eventually(t, func() bool { return gogc() > 100 }, 5*time.Second, time.Millisecond)
	for range 3 {
		runtime.GC()
		require.Eventually(t, func() bool { return gogc() == gcPercent(liveHeap(), floor) }, 5*time.Second, time.Millisecond,
			"after a collection: GOGC %d for live %d", gogc(), liveHeap())
	}
	close(stop)
	<-done
	require.Equal(t, 100, gogc())
	runtime.GC()
	runtime.GC() // the finalizer, had it been left armed, would run now
	time.Sleep(50 * time.Millisecond)
	require.Equal(t, 100, gogc(), "stopped: GOGC is left at 100")
}

// TestKeep: Keep follows the stores and keeps the floor, unless GOGC is
// set in the environment, and returns once stopped with GOGC back at 100.
func TestKeep(t *testing.T) {
	oldLimit, oldGC := debug.SetMemoryLimit(-1), debug.SetGCPercent(100)
	defer func() { debug.SetMemoryLimit(oldLimit); debug.SetGCPercent(oldGC) }()
	gogc := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }
	for _, env := range []string{"", "100"} {
		t.Setenv("GOGC", env)
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { Keep(stop, 1<<30, func() int64 { return 0 }); close(done) }()
		require.Eventually(t, func() bool { return debug.SetMemoryLimit(-1) == 1<<30-Reserve }, 5*time.Second, time.Millisecond)
		if env == "" {
			require.Eventually(t, func() bool { return gogc() > 100 }, 5*time.Second, time.Millisecond, "no floor kept")
		} else {
			time.Sleep(20 * time.Millisecond)
			require.Equal(t, 100, gogc(), "GOGC=%s in the environment, and the floor was kept", env)
		}
		close(stop)
		<-done
		require.Equal(t, 100, gogc())
	}
}
