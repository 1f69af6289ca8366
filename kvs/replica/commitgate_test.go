package replica

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// enterAsync enters c on a goroutine and returns a channel that receives
// the time at which the entry was let go.
func enterAsync(c *commitGate) <-chan time.Time {
	out := make(chan time.Time, 1)
	go func() {
		c.enter()
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
	c := &commitGate{limit: time.Hour}
	for range commitSiblings {
		letGo(t, enterAsync(c), 5*time.Second)
	}
	require.Zero(t, c.held)
	for range commitSiblings {
		c.done()
	}
	letGo(t, enterAsync(c), 5*time.Second)
	require.Zero(t, c.held)

	off := &commitGate{}
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
	c := &commitGate{limit: limit}
	for range commitSiblings {
		c.enter()
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
