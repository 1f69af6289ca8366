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
// ops"). So while the live heap is small the collector's goal is kept at
// GCFloor.
//
// A larger goal buys throughput with memory: one of about 1.1 GiB (a
// quarter of the heap's share under -max-memory auto on a machine of 24
// GiB) took the standard run to 1.27 of its throughput, with the
// server's RSS at 1,329 MiB for 238 (3 rounds A B, 2026-11-30; 64 MiB
// gave 1.07-1.12 and 248 MiB, docs/memory.md). GOGC set in the
// environment makes that trade as its user chooses.

// MaxGCFloor is the most that GCFloor keeps the collector's goal at.
const MaxGCFloor = 64 << 20

// heapMinimum is the Go runtime's least goal at GOGC=100 (4 MiB; its
// defaultHeapMinimum), which it scales with GOGC: at GOGC=1600 the goal
// is 64 MiB at least, whatever the heap holds.
const heapMinimum = 4 << 20

// GCFloor returns the heap that a server with maxMemory bytes lets grow
// to before the collector runs: a quarter of the heap's share (Shares),
// at most MaxGCFloor.
func GCFloor(maxMemory int64) int64 {
	_, heap := Shares(maxMemory)
	return min(heap/4, MaxGCFloor)
}

// gcPercent is the GOGC at which the collector's goal is floor, or a
// hundredth over it, after a collection that left live bytes on the heap
// and scanned scan bytes of stacks and globals; never under 100 (Go's
// default). The runtime's goal is the larger of heapMinimum times
// GOGC/100 and live plus (live + scan) times GOGC/100, so GOGC is at
// most what takes the first to floor, and is what takes the second to
// floor when that is less.
func gcPercent(live, scan, floor int64) int {
	most := floor * 100 / heapMinimum
	p := most
	if work := live + scan; work > 0 {
		p = min(((floor-live)*100+work-1)/work, most) // rounded up
	}
	return int(max(p, 100))
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
// closed, so that the collector's next goal is floor bytes of heap (or a
// hundredth more) while what it holds live is under about half of that,
// and sets it back to what it was when stop is closed. The runtime's
// memory limit (FollowStores) still has the collector run sooner when
// the process nears it. Like FollowStores, it is the process's: one
// server a process may keep it.
func KeepGCFloor(stop <-chan struct{}, floor int64) {
	var mu sync.Mutex
	stopped := false
	percent := func() int {
		live, scan := lastCollection()
		return gcPercent(live, scan, floor)
	}
	before := debug.SetGCPercent(percent())
	afterEachGC(func() bool {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			debug.SetGCPercent(percent())
		}
		return !stopped
	})
	<-stop
	mu.Lock()
	stopped = true
	debug.SetGCPercent(before)
	mu.Unlock()
}

// lastCollection is what the last collection found live on the heap, and
// the bytes of stacks and globals it scanned.
func lastCollection() (live, scan int64) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}}
	metrics.Read(s)
	var v [3]int64
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = int64(s[i].Value.Uint64())
		}
	}
	return v[0], v[1] + v[2]
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
