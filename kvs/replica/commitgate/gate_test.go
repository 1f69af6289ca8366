package commitgate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// enterAsync enters c on a goroutine and returns a channel that receives
// the time at which the entry was let go.
func enterAsync(c *Gate) <-chan time.Time {
	out := make(chan time.Time, 1)
	go func() {
		c.Enter()
		out <- time.Now()
	}()
	return out
}

// letGo waits up to d for an entry started by enterAsync to be let go.
func letGo(t *testing.T, entry <-chan time.Time, d time.Duration) time.Time {
	t.Helper()
	select {
	case at := <-entry:
		return at
	case <-time.After(d):
		t.Fatalf("an entry was still held after %v", d)
		return time.Time{}
	}
}

// TestCommitGateLetsFewEntriesGoAtOnce: with up to commitSiblings entries
// in flight an entry is not held, however long the window; with the gate
// off none is, however many are in flight; and an entry that finds the
// others answered goes at once again.
func TestCommitGateLetsFewEntriesGoAtOnce(t *testing.T) {
	c := &Gate{limit: time.Hour, queue: time.Hour}
	for range commitSiblings {
		letGo(t, enterAsync(c), 5*time.Second)
	}
	require.Zero(t, c.held)
	for range commitSiblings {
		c.Done(Ticket{Released: time.Now()})
	}
	letGo(t, enterAsync(c), 5*time.Second)
	require.Zero(t, c.held)

	off := &Gate{queue: time.Hour}
	for range 10 * commitSiblings {
		letGo(t, enterAsync(off), 5*time.Second)
	}
	require.Zero(t, off.held)
}

// TestCommitGateHoldsEntriesForOneWindow: with commitSiblings entries in
// flight, the next entry opens a window and is held until it ends; an
// entry arriving during the window goes with it, not a window after its
// own arrival; and once the window has ended, the next entry opens a new
// one.
func TestCommitGateHoldsEntriesForOneWindow(t *testing.T) {
	const limit = time.Second
	c := &Gate{limit: limit, queue: time.Hour}
	for range commitSiblings {
		c.Enter()
	}
	opened := time.Now()
	first := enterAsync(c)
	time.Sleep(limit / 2)
	second := enterAsync(c)
	joined := time.Now()

	firstAt := letGo(t, first, 10*time.Second)
	secondAt := letGo(t, second, 10*time.Second)
	require.GreaterOrEqual(t, firstAt.Sub(opened), limit, "held for the whole window")
	require.GreaterOrEqual(t, secondAt.Sub(opened), limit)
	require.Less(t, secondAt.Sub(joined), limit*9/10,
		"the second entry left with the window it joined, %v after it arrived", secondAt.Sub(joined))
	require.EqualValues(t, 2, c.held)

	reopened := time.Now()
	third := enterAsync(c)
	require.GreaterOrEqual(t, letGo(t, third, 10*time.Second).Sub(reopened), limit, "a new window")
	require.EqualValues(t, 3, c.held)
}

// TestCommitGateHoldsOnlyForAQueueInRaft: with commitSiblings others in
// flight, an entry is held once the queue in Raft is slowQueue windows
// long, not at less, and never with fewer others in flight.
func TestCommitGateHoldsOnlyForAQueueInRaft(t *testing.T) {
	const limit = time.Second
	c := &Gate{limit: limit, queue: slowQueue*limit - time.Millisecond}
	for range commitSiblings + 5 {
		letGo(t, enterAsync(c), 5*time.Second)
	}
	require.Zero(t, c.held, "a queue just short of slowQueue windows")

	c.mu.Lock()
	c.queue = slowQueue * limit
	c.mu.Unlock()
	at := time.Now()
	require.GreaterOrEqual(t, letGo(t, enterAsync(c), 10*time.Second).Sub(at), limit)
	entered, held := c.Counts()
	require.EqualValues(t, 1, held)
	require.EqualValues(t, commitSiblings+6, entered)

	few := &Gate{limit: limit, queue: time.Hour}
	for range commitSiblings {
		letGo(t, enterAsync(few), 5*time.Second)
	}
	require.Zero(t, few.held)

	unmeasured := &Gate{limit: time.Hour}
	for range 100 {
		letGo(t, enterAsync(unmeasured), 5*time.Second)
	}
	require.Zero(t, unmeasured.held, "no queue measured yet")
}

// answer counts n entries answered at at, each after inRaft in Raft.
func answer(c *Gate, at time.Time, n int, inRaft time.Duration) {
	for range n {
		c.countLocked(at, inRaft)
	}
}

// TestCommitGateSeesNoQueueInASlowLink: entries that all take a long
// round trip, and no more, make no queue, however long the trip; entries
// whose times spread far above the least of them do. The queue is
// measured once measureEvery has passed, each measure moves it halfway,
// and the floor forgets entries older than floorSpan.
func TestCommitGateSeesNoQueueInASlowLink(t *testing.T) {
	var c Gate
	t0 := time.Unix(1000, 0)
	answer(&c, t0, 50, 500*time.Millisecond)
	require.Zero(t, c.queue, "not measured before measureEvery")
	answer(&c, t0.Add(measureEvery), 1, 500*time.Millisecond)
	require.LessOrEqual(t, c.queue, time.Millisecond, "a 500 ms round trip is no queue")

	// Half the entries meet a queue of 400 ms: the interval's mean is
	// 300 ms over the floor of 100 ms, and the measure moves halfway.
	at := t0.Add(measureEvery)
	answer(&c, at, 10, 100*time.Millisecond)
	answer(&c, at, 9, 500*time.Millisecond)
	answer(&c, at.Add(measureEvery), 1, 500*time.Millisecond)
	require.InDelta(t, float64(100*time.Millisecond), float64(c.queue), float64(time.Millisecond))

	// Once floorSpan has passed, the 100 ms entries are forgotten: a link
	// that grew slower is not taken for a queue for longer than that.
	at = at.Add(measureEvery + floorSpan)
	answer(&c, at, 10, 500*time.Millisecond)
	require.InDelta(t, float64(50*time.Millisecond), float64(c.queue), float64(time.Millisecond),
		"the old floor was forgotten: (0 + 100 ms) / 2")
}

// TestCommitGateHoldsNoEntryForAQueueShorterThanTheFloor: a queue of
// slowQueue windows is not enough when the floor (the round trip over a
// slow link) is longer than it: the spread is the link's. The same queue
// over a floor no longer than it holds the next entry.
func TestCommitGateHoldsNoEntryForAQueueShorterThanTheFloor(t *testing.T) {
	const limit = 40 * time.Millisecond
	c := &Gate{limit: limit, queue: 3 * limit, floor: 3*limit + time.Millisecond}
	for range commitSiblings + 5 {
		letGo(t, enterAsync(c), 5*time.Second)
	}
	require.Zero(t, c.held, "a queue just shorter than the floor")

	c.mu.Lock()
	c.floor = 3 * limit
	c.mu.Unlock()
	letGo(t, enterAsync(c), 5*time.Second)
	require.EqualValues(t, 1, c.held, "a queue as long as the floor")
}

// TestCommitGateMeasuresTheFloor: the measure keeps the floor it
// subtracted, which the hold rule compares the queue with.
func TestCommitGateMeasuresTheFloor(t *testing.T) {
	var c Gate
	t0 := time.Unix(1000, 0)
	answer(&c, t0, 10, 500*time.Millisecond)
	answer(&c, t0, 10, 600*time.Millisecond)
	answer(&c, t0.Add(measureEvery), 1, 550*time.Millisecond)
	require.Equal(t, 500*time.Millisecond, c.floor)
	require.InDelta(t, float64(50*time.Millisecond), float64(c.queue), float64(time.Millisecond))
}
