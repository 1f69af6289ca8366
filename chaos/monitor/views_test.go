package monitor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/wire"
)

// TestTermAndLeaderChanges: terms count from the last poll before the
// window; a poll round whose highest-term server did not answer (a lower
// maximum) is neither an election nor a wrap-around; polls with no leader
// do not count as leader changes.
func TestTermAndLeaderChanges(t *testing.T) {
	s := time.Second
	vs := []View{{At: 0, Leader: 0, Term: 3}, {At: 1 * s, Leader: 0, Term: 3}, {At: 2 * s, Leader: -1, Term: 2},
		{At: 3 * s, Leader: 1, Term: 4}, {At: 4 * s, Leader: 1, Term: 4}, {At: 5 * s, Leader: -1, Term: 4}, {At: 6 * s, Leader: 1, Term: 4}}
	require.Zero(t, TermChanges(vs, 1*s, 3*s))
	require.EqualValues(t, 1, TermChanges(vs, 1*s, 4*s))
	require.EqualValues(t, 1, TermChanges(vs, 3*s, 7*s)) // the rise at 3 s, against the term before it
	require.Zero(t, TermChanges(vs, 4*s, 7*s))
	require.Equal(t, 1, LeaderChanges(vs, 0, 7*s))
	require.Equal(t, 0, LeaderChanges(vs, 3*s, 7*s))
}

// TestGateCountsTakesTheLastPollBefore: the counts are those of the
// server's last successful poll before t, whatever order the samples of
// several servers come in.
func TestGateCountsTakesTheLastPollBefore(t *testing.T) {
	at := func(sec, server int, entries, held uint64, ok bool) Sample {
		return Sample{At: time.Duration(sec) * time.Second, Server: server, OK: ok,
			Shards: []wire.ShardStatus{{Shard: 0, GateEntries: entries, GateHeld: held}}}
	}
	ss := []Sample{at(1, 0, 10, 1, true), at(2, 1, 99, 99, true), at(3, 0, 20, 2, true), at(2, 0, 15, 1, true), at(4, 0, 0, 0, false), at(5, 0, 30, 9, true)}
	e, h := GateCounts(ss, 0, 0, 4*time.Second+time.Millisecond)
	require.EqualValues(t, 20, e)
	require.EqualValues(t, 2, h)
	e, h = GateCounts(ss, 0, 0, time.Second)
	require.Zero(t, e+h, "no poll before")
}
