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

// slowest is a rate of answered entries so low that commitSiblings alone
// decides whether an entry is held.
const slowest = 1e-9

// TestCommitGateLetsFewEntriesGoAtOnce: with up to commitSiblings entries
// in flight an entry is not held, however long the window; with the gate
// off none is, however many are in flight; and an entry that finds the
// others answered goes at once again.
func TestCommitGateLetsFewEntriesGoAtOnce(t *testing.T) {
	c := &Gate{limit: time.Hour, rate: slowest}
	for range commitSiblings {
		letGo(t, enterAsync(c), 5*time.Second)
	}
	require.Zero(t, c.held)
	for range commitSiblings {
		c.Done()
	}
	letGo(t, enterAsync(c), 5*time.Second)
	require.Zero(t, c.held)

	off := &Gate{rate: slowest}
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
	c := &Gate{limit: limit, rate: slowest}
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

// TestCommitGateHoldsOnlyAQueueAWindowDeep: at 10 entries answered a
// second and a 1 s window, an entry is held only once 10 others are in
// flight; before the first rate is measured, none is.
func TestCommitGateHoldsOnlyAQueueAWindowDeep(t *testing.T) {
	const limit = time.Second
	c := &Gate{limit: limit, rate: 10}
	for range 10 {
		letGo(t, enterAsync(c), 5*time.Second)
	}
	require.Zero(t, c.held)
	entered := time.Now()
	require.GreaterOrEqual(t, letGo(t, enterAsync(c), 10*time.Second).Sub(entered), limit)
	require.EqualValues(t, 1, c.held)

	unmeasured := &Gate{limit: time.Hour}
	for range 100 {
		letGo(t, enterAsync(unmeasured), 5*time.Second)
	}
	require.Zero(t, unmeasured.held)
}

// TestCommitGateMeasuresTheRate: the rate is measured once rateEvery has
// passed, and each new measure moves it halfway.
func TestCommitGateMeasuresTheRate(t *testing.T) {
	var c Gate
	t0 := time.Unix(1000, 0)
	for i := range 100 {
		c.countLocked(t0.Add(time.Duration(i) * time.Millisecond))
	}
	require.Zero(t, c.rate, "not measured before rateEvery")
	c.countLocked(t0.Add(250 * time.Millisecond)) // 101 answered in 250 ms
	require.InDelta(t, 404, c.rate, 0.01)
	for i := range 50 {
		c.countLocked(t0.Add(260*time.Millisecond + time.Duration(i)*time.Millisecond))
	}
	c.countLocked(t0.Add(750 * time.Millisecond)) // 51 in 500 ms: 102 a second
	require.InDelta(t, (404+102)/2.0, c.rate, 0.01)
}

// TestCommitGateHoldsWhenRequestsAreSlow: with commitSiblings others in
// flight, an entry is held once the server's requests take two windows
// on average, not at less, and never with fewer others in flight.
func TestCommitGateHoldsWhenRequestsAreSlow(t *testing.T) {
	const limit = time.Second
	requestTime := 3 * limit / 2
	c := &Gate{limit: limit, requestTime: func() time.Duration { return requestTime }}
	for range commitSiblings + 5 {
		letGo(t, enterAsync(c), 5*time.Second)
	}
	require.Zero(t, c.held, "requests at 1.5 windows")

	requestTime = 2 * limit
	entered := time.Now()
	require.GreaterOrEqual(t, letGo(t, enterAsync(c), 10*time.Second).Sub(entered), limit)
	require.EqualValues(t, 1, c.held)

	few := &Gate{limit: limit, requestTime: func() time.Duration { return time.Hour }}
	for range commitSiblings {
		letGo(t, enterAsync(few), 5*time.Second)
	}
	require.Zero(t, few.held)
}
