package commitgate

import (
	"sync"
	"time"
)

// Gate gathers a leader's log entries (write batches and read
// barriers) into groups, so that Raft stores and sends several at once:
// one disk write and one fsync on the leader, and one AppendEntries RPC
// and one fsync on each follower, for the whole group.
//
// Raft batches by itself only the entries queued while its loop is busy:
// under the standard load about three a sync. The gate holds an entry
// until a window of the gate's limit ends, and lets it go with every
// entry that arrived in the window, but only when at least
// commitSiblings others of the shard are in flight (entered and not yet
// answered) and the load is queued deep anyway, by either of two
// measures:
//
//   - the server's requests have recently spent at least slowRequests
//     windows in it on average (requestTime), or
//   - the shard's entries in flight would take a window or more to answer
//     at the recent rate.
//
// Holding an entry then buys fewer syncs, RPCs and wake-ups for a small
// part of what its queue costs it. Otherwise an entry goes at once: a
// lone client, a few, or many whose batches are small and answered fast
// wait for nothing (a window for every entry with 4 others in flight cut
// 16 clients' 64-op batches from 90k to 23k ops/s). Neither measure
// keeps the gate holding once the load is light: holding adds half a
// window on average, and each measure asks for a full one or more.
// PostgreSQL's commit_delay and commit_siblings hold a commit on the same
// kind of rule, with a fixed count. See docs/results.md, "Group commit".
//
// A Gate with a limit of 0 lets every entry go at once.
type Gate struct {
	limit time.Duration // the window; 0 turns the gate off
	// requestTime returns the server's recent mean time per request; nil
	// when not known.
	requestTime func() time.Duration

	mu       sync.Mutex
	inFlight int           // entries that entered and are not done
	open     chan struct{} // closed when the current window ends; nil while none is open
	// rate is the recent rate of answered entries per second, 0 until
	// the first rateEvery has passed; answered counts them since since.
	rate     float64
	answered int
	since    time.Time
	// held counts the entries that waited for a window (for tests).
	held uint64
}

// commitSiblings is the fewest of a shard's entries in flight for which
// the gate holds the next one.
const commitSiblings = 4

// slowRequests is how many windows long the server's requests must have
// been on average for the gate to hold an entry.
const slowRequests = 2

// rateEvery is how often the gate measures the rate of answered entries.
const rateEvery = 200 * time.Millisecond

// Enter is called before an entry goes to Raft; it returns once the entry
// may go. Every enter must be followed by one done.
func (c *Gate) Enter() {
	if c.limit <= 0 {
		return
	}
	c.mu.Lock()
	c.inFlight++
	if c.open == nil && !c.deepLocked() {
		c.mu.Unlock()
		return
	}
	if c.open == nil {
		ch := make(chan struct{})
		c.open = ch
		time.AfterFunc(c.limit, func() {
			c.mu.Lock()
			c.open = nil
			c.mu.Unlock()
			close(ch)
		})
	}
	ch := c.open
	c.held++
	c.mu.Unlock()
	<-ch
}

// deepLocked reports whether the entry entering should wait for a window
// (see Gate).
func (c *Gate) deepLocked() bool {
	others := c.inFlight - 1
	if others < commitSiblings {
		return false
	}
	if c.requestTime != nil && c.requestTime() >= slowRequests*c.limit {
		return true
	}
	return c.rate > 0 && float64(others) >= c.rate*c.limit.Seconds()
}

// Done is called when an entry that entered has been answered.
func (c *Gate) Done() {
	if c.limit <= 0 {
		return
	}
	c.mu.Lock()
	c.inFlight--
	c.countLocked(time.Now())
	c.mu.Unlock()
}

// countLocked counts an entry answered at now, and measures the rate once
// rateEvery has passed since the last measure: the mean of the last
// interval's rate and the one before, so that one odd interval moves it
// only halfway.
func (c *Gate) countLocked(now time.Time) {
	if c.since.IsZero() {
		c.since = now
	}
	c.answered++
	if d := now.Sub(c.since); d >= rateEvery {
		r := float64(c.answered) / d.Seconds()
		if c.rate > 0 {
			r = (r + c.rate) / 2
		}
		c.rate, c.answered, c.since = r, 0, now
	}
}
