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
// entry that arrived in the window, but only when holding pays: when at
// least commitSiblings others of the shard are in flight (entered and not
// yet answered) and the shard's entries queue in Raft, for the servers'
// CPU and the logs' fsyncs, slowQueue windows or more on average, and
// for no less than the floor: the queue is the larger part of an entry's
// time in Raft.
//
// The gate measures that queue itself, from what it sees of every entry:
// its time in Raft (from its release to its answer) beyond the floor of
// those times, the least of the last floorSpan. The floor is what an
// entry cannot help paying: the round trip to a quorum, one fsync, one
// apply. Holding entries saves syncs, RPCs and wake-ups, which shortens
// the queue; it cannot shorten a round trip. Over a slow link the floor
// grows by the link's delay and the queue stays short beside it, so the
// gate lets entries go at once. The queue must also match the floor
// because a slow link spreads the times in Raft with it: under a light
// load over a 500 ms round trip, a rule on the queue alone held 221 of
// 1,361 entries; a spread that is small beside the trip is the link's,
// not a queue's. Before either rule, the gate held entries whenever
// requests were slow,
// and at +100 ms on every link of a leader kept 82-85% of the baseline
// against 96% without it (issue 33). A lone client, a few, or many whose
// batches are small and answered fast find no queue either and wait for
// nothing (a window for every entry with 4 others in flight cut 16
// clients' 64-op batches from 90k to 23k ops/s). PostgreSQL's
// commit_delay and commit_siblings hold a commit on a rule of the same
// kind, with a fixed count. See docs/replication.md, "Group commit".
//
// A Gate with a limit of 0 lets every entry go at once.
type Gate struct {
	limit time.Duration // the window; 0 turns the gate off

	mu       sync.Mutex
	inFlight int           // entries that entered and are not done
	open     chan struct{} // closed when the current window ends; nil while none is open
	// queue is the recent mean time entries spent in Raft beyond the
	// floor, 0 until the first interval of measureEvery has passed.
	queue time.Duration
	// floor is the least time in Raft of the entries of the last
	// floorSpan, as of the last measure.
	floor time.Duration
	// The current interval: since when, the entries answered and their
	// total time in Raft.
	since    time.Time
	answered int
	inRaft   time.Duration
	// least is the current interval's least time in Raft; floors hold
	// the least of each interval before, the newest at floors[at].
	least  time.Duration
	floors [floorSpan / measureEvery]floorMark
	at     int
	// entered counts the entries that entered, held those of them that
	// waited for a window.
	entered, held uint64
}

// Ticket is what the gate tells of an entry it let go, to be handed back
// to Done.
type Ticket struct {
	// Released is when the entry was let go into Raft.
	Released time.Time
}

// floorMark is the least time in Raft of the entries answered in an
// interval that ended at end.
type floorMark struct {
	end   time.Time
	least time.Duration
}

// commitSiblings is the fewest of a shard's entries in flight for which
// the gate holds the next one.
const commitSiblings = 4

// slowQueue is how many windows long the queue in Raft must be for the
// gate to hold an entry: holding costs an entry half a window on
// average, so it pays only where the queue it shortens is longer.
const slowQueue = 2

// measureEvery is how often the gate measures the queue.
const measureEvery = 200 * time.Millisecond

// floorSpan is how far back the floor reaches: long enough to hold an
// entry that met no queue (a loaded shard answers hundreds a second),
// short enough to follow a link that slows down. For up to floorSpan after
// a link slows, the old floor makes the longer trip look like a queue and
// the gate holds entries it should not: with 2 s, about 7% of a light
// load's entries in the seconds after +100 ms were added, which pushed
// its p99 past the round trip and the 50 ms margin.
const floorSpan = time.Second

// Enter is called before an entry goes to Raft; it returns once the entry
// may go. Every enter must be followed by one done with its ticket.
func (c *Gate) Enter() Ticket {
	if c.limit <= 0 {
		return Ticket{}
	}
	c.mu.Lock()
	c.inFlight++
	c.entered++
	if c.open == nil && !c.deepLocked() {
		c.mu.Unlock()
		return Ticket{Released: time.Now()}
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
	return Ticket{Released: time.Now()}
}

// deepLocked reports whether the entry entering should wait for a window
// (see Gate).
func (c *Gate) deepLocked() bool {
	return c.inFlight-1 >= commitSiblings &&
		(plantedAlwaysHold || c.queue >= slowQueue*c.limit && c.queue >= c.floor)
}

// Done is called with an entry's ticket when the entry has been answered.
func (c *Gate) Done(t Ticket) {
	if c.limit <= 0 {
		return
	}
	now := time.Now()
	c.mu.Lock()
	c.inFlight--
	c.countLocked(now, now.Sub(t.Released))
	c.mu.Unlock()
}

// Counts returns how many entries have entered so far, and how many of
// them waited for a window (both 0 with the gate off).
func (c *Gate) Counts() (entered, held uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entered, c.held
}

// Queue returns the gate's measure of the shard's queue in Raft.
func (c *Gate) Queue() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queue
}

// countLocked counts an entry answered at now after inRaft in Raft, and
// measures the queue once measureEvery has passed since the last measure:
// the interval's mean time in Raft less the floor (the least time of the
// entries answered in the last floorSpan), averaged with the measure
// before, so that one odd interval moves it only halfway.
func (c *Gate) countLocked(now time.Time, inRaft time.Duration) {
	if c.since.IsZero() {
		c.since = now
	}
	c.answered++
	c.inRaft += inRaft
	if c.least == 0 || inRaft < c.least {
		c.least = max(inRaft, 1)
	}
	if now.Sub(c.since) < measureEvery {
		return
	}
	floor := c.least
	for _, m := range c.floors {
		if m.least > 0 && now.Sub(m.end) < floorSpan {
			floor = min(floor, m.least)
		}
	}
	q := c.inRaft/time.Duration(c.answered) - floor
	if c.queue > 0 {
		q = (q + c.queue) / 2
	}
	c.queue = max(q, 1)
	c.floor = floor
	c.at = (c.at + 1) % len(c.floors)
	c.floors[c.at] = floorMark{end: now, least: c.least}
	c.answered, c.inRaft, c.least, c.since = 0, 0, 0, now
}
