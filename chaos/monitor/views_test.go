package monitor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
