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

// Shares splits maxMemory bytes: what the stores may hold, off the Go
// heap, and what the Go heap may take (a quarter, at least 128 MiB and
// at most half).
func Shares(maxMemory int64) (stores, heap int64) {
	heap = min(max(maxMemory/4, 128<<20), maxMemory/2)
	return maxMemory - heap, heap
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
// maxMemory less what the stores hold (stores()), never under the heap's
// share, now and every Every until stop is closed, so that the heap and
// the stores together stay within maxMemory. A limit fixed at the heap's
// share instead sat under what full reply budgets hold, and the collector
// then ran without pause. The limit is the process's: one server a
// process may follow.
func FollowStores(stop <-chan struct{}, maxMemory int64, stores func() int64) {
	_, heap := Shares(maxMemory)
	set := func() { debug.SetMemoryLimit(max(maxMemory-stores(), heap)) }
	set()
	tick := time.NewTicker(Every)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			set()
		}
	}
}

// Every is how often FollowStores follows the stores.
const Every = 250 * time.Millisecond
