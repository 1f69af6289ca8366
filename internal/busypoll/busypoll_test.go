package busypoll

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const maxPoll = 100 * time.Microsecond

// run makes n calls through p, each taking polled or slept as it chose,
// and returns how many polled.
func run(p *Policy, n int, polled, slept time.Duration) int {
	polls := 0
	for range n {
		d := p.Choose()
		took := slept
		if d > 0 {
			polls++
			took = polled
		}
		p.Observe(d, took)
	}
	return polls
}

// TestPolicyTriesBothWaysFirst: the first call polls, the second sleeps,
// whatever they took.
func TestPolicyTriesBothWaysFirst(t *testing.T) {
	p := New(maxPoll)
	require.Equal(t, maxPoll, p.Choose())
	p.Observe(maxPoll, 500*time.Microsecond)
	require.Equal(t, time.Duration(0), p.Choose())
	p.Observe(0, 20*time.Microsecond)
	slept, polled := p.Means()
	require.Equal(t, 20*time.Microsecond, slept)
	require.Equal(t, 500*time.Microsecond, polled)
}

// TestPolicyKeepsToTheQuickerWay: where polling takes 20 µs and sleeping
// 57 (two cores on the VM), all calls but a few explorers poll; where the
// two are alike, or polling is slower, only a few explorers poll. The
// explorers come every MinExploreEvery calls at first, and less often
// while they lose.
func TestPolicyKeepsToTheQuickerWay(t *testing.T) {
	const n = 64 * 50
	p := New(maxPoll)
	explorers := n - run(p, n, 20*time.Microsecond, 57*time.Microsecond)
	require.GreaterOrEqual(t, explorers, 4, "the way not preferred is still timed")
	require.LessOrEqual(t, explorers, 8, "losing explorers come less often")

	for _, polled := range []time.Duration{22 * time.Microsecond, 30 * time.Microsecond} {
		p := New(maxPoll)
		explorers := run(p, n, polled, 21*time.Microsecond)
		require.GreaterOrEqual(t, explorers, 4, "polling %v against sleeping 21µs", polled)
		require.LessOrEqual(t, explorers, 8, "polling %v against sleeping 21µs", polled)
	}
}

// TestPolicyFollowsAChange: when the reply stops coming within a poll
// (the server moved away), the calls go back to sleeping within a few
// dozen calls; when it is near again, back to polling within
// MaxExploreEvery calls and a few explorers.
func TestPolicyFollowsAChange(t *testing.T) {
	p := New(maxPoll)
	run(p, 5000, 20*time.Microsecond, 57*time.Microsecond)
	run(p, 100, 300*time.Microsecond, 200*time.Microsecond)
	require.LessOrEqual(t, run(p, 1000, 300*time.Microsecond, 200*time.Microsecond), 1000/MinExploreEvery, "no longer polls")
	run(p, MaxExploreEvery+8*MinExploreEvery, 20*time.Microsecond, 57*time.Microsecond)
	require.GreaterOrEqual(t, run(p, 640, 20*time.Microsecond, 57*time.Microsecond), 640-640/MinExploreEvery, "polls again")
}

// TestPolicyKeepsExploringAfterAFailedCall: an explorer that is never
// observed (its call failed) does not stop the exploring.
func TestPolicyKeepsExploringAfterAFailedCall(t *testing.T) {
	p := New(maxPoll)
	p.Observe(0, 57*time.Microsecond)
	p.Observe(maxPoll, 20*time.Microsecond)
	sleeps := 0
	for range 10 * MinExploreEvery {
		if p.Choose() == 0 {
			sleeps++ // an explorer, not observed
		}
	}
	require.Equal(t, 10, sleeps)
}

// TestPolicyStallMovesTheMeanByAnEighth: one call that took a second
// moves the preferred way's mean by an eighth of it, not to near a
// second.
func TestPolicyStallMovesTheMeanByAnEighth(t *testing.T) {
	p := New(maxPoll)
	p.Observe(0, 60*time.Microsecond)
	p.Observe(maxPoll, 20*time.Microsecond)
	p.Observe(maxPoll, time.Second)
	_, polled := p.Means()
	require.Equal(t, 22500*time.Nanosecond, polled, "20µs plus an eighth")
}

// TestPolicyThatNeverPolls: a Policy made with no maxPoll, a zero Policy and
// a nil one never poll.
func TestPolicyThatNeverPolls(t *testing.T) {
	var nilPolicy *Policy
	for _, p := range []*Policy{New(0), New(-time.Second), {}, nilPolicy} {
		for range 3 * MinExploreEvery {
			require.Equal(t, time.Duration(0), p.Choose())
			p.Observe(0, 20*time.Microsecond)
		}
	}
	slept, polled := nilPolicy.Means()
	require.Zero(t, slept)
	require.Zero(t, polled)
}
