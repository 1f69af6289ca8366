package stats

import (
	"sync/atomic"
	"time"
)

// movingMean is a moving average of durations, safe for concurrent use:
// each sample moves it an eighth of the way to itself.
type movingMean struct{ ns atomic.Int64 }

// add notes a sample.
func (m *movingMean) add(d time.Duration) {
	for {
		old := m.ns.Load()
		if m.ns.CompareAndSwap(old, old+(int64(d)-old)/8) {
			return
		}
	}
}

// get returns the average.
func (m *movingMean) get() time.Duration { return time.Duration(m.ns.Load()) }
