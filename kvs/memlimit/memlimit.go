// Package memlimit splits a server's -max-memory into its shares (what
// the stores may hold off the Go heap, what the heap may take) and keeps
// the Go runtime's memory limit at what the stores leave of it.
package memlimit

import (
	"runtime/debug"
	"time"
)

// Min is the least -max-memory a server runs with.
const Min = 256 << 20

// Reserve is what a server's process keeps resident outside both the Go
// runtime's memory limit and the stores: its executable's code and data,
// mapped from the file (13 MiB on Linux/amd64), and a margin for the
// limit, which the collector meets only as it runs. Under a pipelining
// attack a server whose Go limit was -max-memory less its stores peaked
// at 1,028 MiB of 1,024 (docs/memory.md).
const Reserve = 32 << 20

// Shares splits maxMemory bytes: what the Go heap may take (a quarter,
// at least 128 MiB and at most half), and what the stores may hold, off
// the Go heap, which is the rest less the Reserve.
func Shares(maxMemory int64) (stores, heap int64) {
	heap = min(max(maxMemory/4, 128<<20), maxMemory/2)
	return maxMemory - Reserve - heap, heap
}

// LogCacheShare is what the Raft log caches of a server with maxMemory
// bytes may hold together: a quarter of the heap's share. 0 (no
// -max-memory) is no bound.
func LogCacheShare(maxMemory int64) int64 {
	if maxMemory <= 0 {
		return 0
	}
	_, heap := Shares(maxMemory)
	return heap / 4
}

// FollowStores sets the Go runtime's memory limit (GOMEMLIMIT) to
// maxMemory less the Reserve and what the stores hold (stores()), never
// under the heap's share, now and again until stop is closed, so that the
// heap, the stores and the executable together stay within maxMemory. A
// limit fixed at the heap's share instead sat under what full reply
// budgets hold, and the collector then ran without pause. The limit is
// the process's: one server a process may follow.
//
// It follows every Every while the limit moves by a 256th of maxMemory or
// more between looks, and otherwise half as often each time, down to
// every EveryQuiet: each look wakes the process, and on a busy core every
// wake delays the request it lands in. So a store that starts to grow
// after a quiet spell is followed at most EveryQuiet late.
func FollowStores(stop <-chan struct{}, maxMemory int64, stores func() int64) {
	_, heap := Shares(maxMemory)
	limit := func() int64 { return max(maxMemory-Reserve-stores(), heap) }
	set := limit()
	debug.SetMemoryLimit(set)
	every := Every
	timer := time.NewTimer(every)
	defer timer.Stop()
	for {
		select {
		case <-stop:
			return
		case <-timer.C:
		}
		now := limit()
		every = nextEvery(every, now-set, maxMemory)
		if now != set {
			debug.SetMemoryLimit(now)
			set = now
		}
		timer.Reset(every)
	}
}

// nextEvery is FollowStores's next interval after one of every in which
// the limit moved by moved bytes.
func nextEvery(every time.Duration, moved, maxMemory int64) time.Duration {
	if moved >= maxMemory/256 || -moved >= maxMemory/256 {
		return Every
	}
	return min(2*every, EveryQuiet)
}

// Every is how often FollowStores follows stores that grow or shrink.
const Every = 250 * time.Millisecond

// EveryQuiet is how often FollowStores follows stores that hold still.
const EveryQuiet = time.Second
