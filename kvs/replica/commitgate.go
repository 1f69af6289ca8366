package replica

import (
	"sync"
	"time"
)

// commitGate gathers a leader's log entries (write batches and read
// barriers) into groups, so that Raft stores and sends several at once:
// one disk write and one fsync on the leader, and one AppendEntries RPC
// and one fsync on each follower, for the whole group.
//
// Raft batches by itself only the entries queued while its loop is busy:
// under the standard load about three a sync. The gate holds an entry
// that finds at least commitSiblings others of the shard in flight
// (entered and not yet answered) until a window of the gate's limit
// ends, and lets it go with every entry that arrived in the window. An
// entry with fewer in flight goes at once, so a lone client, or a few,
// wait for nothing; as in PostgreSQL's commit_delay and commit_siblings,
// only a load with many concurrent commits, whose entries spend tens of
// milliseconds queued anyway, pays the window, and it pays it in fewer
// syncs, fewer RPCs and fewer wake-ups (docs/results.md, "Group commit").
//
// A commitGate with a limit of 0 lets every entry go at once.
type commitGate struct {
	limit time.Duration // the window; 0 turns the gate off

	mu       sync.Mutex
	inFlight int           // entries that entered and are not done
	open     chan struct{} // closed when the current window ends; nil while none is open
	// held counts the entries that waited for a window (for tests).
	held uint64
}

// commitSiblings is how many of a shard's entries must be in flight for
// the gate to hold the next one.
const commitSiblings = 4

// enter is called before an entry goes to Raft; it returns once the entry
// may go. Every enter must be followed by one done.
func (c *commitGate) enter() {
	if c.limit <= 0 {
		return
	}
	c.mu.Lock()
	c.inFlight++
	if c.inFlight <= commitSiblings && c.open == nil {
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

// done is called when an entry that entered has been answered.
func (c *commitGate) done() {
	if c.limit <= 0 {
		return
	}
	c.mu.Lock()
	c.inFlight--
	c.mu.Unlock()
}
