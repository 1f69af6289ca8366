package load

import (
	"sync/atomic"
	"time"
)

// pacer is the schedule of an open load: it hands out the times at which
// batches are due, one every interval, whether the earlier ones were
// answered or not.
type pacer struct {
	due  chan time.Time
	done chan struct{}
	// behind counts the batches that fell due while due was full: the
	// load could not even queue them.
	behind atomic.Int64
}

// pacerBacklog is how many due batches may wait for a free goroutine.
const pacerBacklog = 1 << 16

// run hands out a due time every interval until done is closed.
func (p *pacer) run(interval time.Duration) {
	next := time.Now()
	for {
		next = next.Add(interval)
		wait := time.NewTimer(time.Until(next))
		select {
		case <-p.done:
			wait.Stop()
			return
		case <-wait.C:
		}
		select {
		case p.due <- next:
		default:
			p.behind.Add(1)
		}
	}
}

// Pace turns the load into an open one, or back: with opsPerSec > 0, a
// batch falls due every Batch/opsPerSec seconds, on a schedule that does
// not wait for answers, and the next free goroutine sends it; its latency
// runs from when it fell due, not from when it was sent, so a load that
// falls behind shows in the latencies (no coordinated omission). With 0,
// every goroutine sends its next batch as soon as its last is answered
// (the closed load), as before the first call. It returns how many
// batches of the previous open schedule fell due while the backlog was
// full and so were never sent (0 after a closed load).
func (b *Bulk) Pace(opsPerSec float64) int64 {
	var p *pacer
	if opsPerSec > 0 {
		p = &pacer{due: make(chan time.Time, pacerBacklog), done: make(chan struct{})}
		go p.run(time.Duration(float64(b.cfg.Batch) / opsPerSec * float64(time.Second)))
	}
	old := b.pace.Swap(p)
	if old == nil {
		return 0
	}
	close(old.done)
	return old.behind.Load()
}

// nextDue waits for the open load's next due batch and returns when it
// fell due; it returns now at once under the closed load, and false when
// stop is closed.
func (b *Bulk) nextDue(stop <-chan struct{}) (time.Time, bool) {
	for {
		p := b.pace.Load()
		if p == nil {
			return time.Now(), true
		}
		select {
		case <-stop:
			return time.Time{}, false
		case due := <-p.due:
			return due, true
		case <-p.done:
			// The schedule changed: wait on the new one, or none.
		}
	}
}
