package memlimit

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
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

// goalOf is the Go runtime's heap goal at GOGC p after a collection
// that left live bytes and scanned scan bytes of stacks and globals
// (runtime/mgcpacer.go: the larger of its minimum, scaled by GOGC, and
// the live heap grown by GOGC percent of the work).
func goalOf(live, scan int64, p int) int64 {
	return max(heapMinimum*int64(p)/100, live+(live+scan)*int64(p)/100)
}

// TestGCPercent: while the live heap is under about half the floor, the
// goal the runtime makes of the GOGC set is the floor, or at most a
// hundredth over it (its minimum, which GOGC scales, included); past
// that, Go's default.
func TestGCPercent(t *testing.T) {
	for _, floor := range []int64{32 << 20, 64 << 20} {
		for _, live := range []int64{0, 1 << 10, 1 << 20, 4 << 20, 10 << 20, floor/2 - 1<<20} {
			for _, scan := range []int64{0, 200 << 10, 2 << 20} {
				p := gcPercent(live, scan, floor)
				goal := goalOf(live, scan, p)
				require.GreaterOrEqual(t, goal, floor, "live %d scan %d: GOGC %d", live, scan, p)
				require.LessOrEqual(t, goal, floor+floor/100, "live %d scan %d: GOGC %d", live, scan, p)
			}
		}
		require.Equal(t, 100, gcPercent(floor/2, 0, floor), "at half the floor, the default reaches it")
		require.Equal(t, 100, gcPercent(1<<30, 1<<20, floor), "over the floor: the default")
	}
	require.Equal(t, 100, gcPercent(0, 0, 2<<20), "a floor under the runtime's minimum: the default")
}

// TestGCFloor: a quarter of the heap's share, at most MaxGCFloor.
func TestGCFloor(t *testing.T) {
	require.Equal(t, int64(32<<20), GCFloor(Min), "128 MiB of heap")
	require.Equal(t, int64(MaxGCFloor), GCFloor(1<<30))
	require.Equal(t, int64(MaxGCFloor), GCFloor(24<<30))
}

// gcMetric reads one of the runtime's figures.
func gcMetric(name string) int64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// TestKeepGCFloor: with this test's small live heap, the runtime's goal
// is the floor, kept so across collections, and GOGC goes back to what
// it was when stopped.
func TestKeepGCFloor(t *testing.T) {
	old := debug.SetGCPercent(150)
	defer debug.SetGCPercent(old)
	const floor = 48 << 20 // far over this test's live heap
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { KeepGCFloor(stop, floor); close(done) }()
	waitGoal := func(when string) {
		t.Helper()
		var g int64
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if g = gcMetric("/gc/heap/goal:bytes"); g >= floor && g <= floor+floor/100 {
				return
			}
		}
		t.Fatalf("%s: the runtime's goal %d for a floor of %d", when, g, floor)
	}
	waitGoal("started")
	for range 3 {
		runtime.GC()
		waitGoal("after a collection")
	}
	close(stop)
	<-done
	require.Equal(t, int64(150), gcMetric("/gc/gogc:percent"))
	runtime.GC()
	runtime.GC() // the finalizer, had it been left armed, would run now
	time.Sleep(50 * time.Millisecond)
	require.Equal(t, int64(150), gcMetric("/gc/gogc:percent"), "stopped: GOGC is left as it was")
}

// TestKeep: Keep follows the stores and keeps the floor, unless GOGC is
// set in the environment, and returns once stopped with GOGC back at 100.
func TestKeep(t *testing.T) {
	oldLimit, oldGC := debug.SetMemoryLimit(-1), debug.SetGCPercent(100)
	defer func() { debug.SetMemoryLimit(oldLimit); debug.SetGCPercent(oldGC) }()
	gogc := func() int { return int(gcMetric("/gc/gogc:percent")) }
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
