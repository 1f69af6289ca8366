package memlimit

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// A server's stores are off the Go heap, so what the heap holds live is
// small, a few MiB when idle or serving a lone caller, and at the default
// GOGC=100 the collector then runs each time a few MiB more have been
// allocated: every 4,000 to 8,000 lone ops at about 500 bytes each. Each
// collection stops the requests under way for its work, and wakes the
// runtime's monitor thread, which then runs every 20 µs for a while, on
// the same core as a client that shares it (docs/results.md, "Lone
// ops"). So the collector's goal is kept at GCFloor at least.
//
// A larger floor buys throughput with memory: a quarter of the heap's
// share of -max-memory (1.1 GiB for auto on a machine of 24 GiB) took
// the standard run to 1.27 of its throughput, with the server's RSS at
// 1,329 MiB for 238 (3 rounds A B, 2026-11-30). GOGC set in the
// environment makes that trade as its user chooses.

// MaxGCFloor is the most that GCFloor keeps the collector's goal at.
const MaxGCFloor = 64 << 20

// maxGCPercent bounds the GOGC that GCFloor sets, whatever the live heap.
const maxGCPercent = 10_000

// GCFloor returns the heap that a server with maxMemory bytes lets grow
// to before the collector runs: a quarter of the heap's share (Shares),
// at most MaxGCFloor.
func GCFloor(maxMemory int64) int64 {
	_, heap := Shares(maxMemory)
	return min(heap/4, MaxGCFloor)
}

// gcPercent is the GOGC that makes the collector's goal, live bytes and
// GOGC percent of that again, at least floor: never under 100 (Go's
// default) nor over maxGCPercent.
func gcPercent(live, floor int64) int {
	live = max(live, 1)
	p := ((floor-live)*100 + live - 1) / live // rounded up
	return int(min(max(p, 100), maxGCPercent))
}

// Keep runs FollowStores and, unless GOGC is set in the environment,
// KeepGCFloor at GCFloor(maxMemory), until stop is closed and both have
// returned.
func Keep(stop <-chan struct{}, maxMemory int64, stores func() int64) {
	var wg sync.WaitGroup
	if os.Getenv("GOGC") == "" {
		wg.Go(func() { KeepGCFloor(stop, GCFloor(maxMemory)) })
	}
	FollowStores(stop, maxMemory, stores)
	wg.Wait()
}

// KeepGCFloor sets GOGC after each garbage collection, until stop is
// closed, so that the collector's next goal is at least floor bytes of
// heap (gcPercent of what the collection left live), and sets it back to
// 100 when stop is closed. The runtime's memory limit (FollowStores)
// still has the collector run sooner when the process nears it. Like
// FollowStores, it is the process's: one server a process may keep it.
func KeepGCFloor(stop <-chan struct{}, floor int64) {
	var mu sync.Mutex
	stopped := false
	set := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			debug.SetGCPercent(gcPercent(liveHeap(), floor))
		}
		return !stopped
	}
	set()
	afterEachGC(set)
	<-stop
	mu.Lock()
	stopped = true
	debug.SetGCPercent(100)
	mu.Unlock()
}

// liveHeap is what the last collection found live on the heap, in bytes.
func liveHeap() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// gcSentinel is an object made unreachable so that its finalizer runs
// after a collection; it holds a pointer so that it is not a tiny
// allocation, whose finalizer may never run.
type gcSentinel struct {
	_ *int
}

// afterEachGC calls f in the finalizer goroutine after each collection
// from now on, while f returns true.
func afterEachGC(f func() bool) {
	var again func(*gcSentinel)
	again = func(s *gcSentinel) {
		if f() {
			runtime.SetFinalizer(s, again) // the object lives on, to the next collection
		}
	}
	runtime.SetFinalizer(&gcSentinel{}, again)
}
