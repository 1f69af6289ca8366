package membership

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/shard"
)

func addrs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("10.0.0.%d:8080", i+1)
	}
	return out
}

func initial(t *testing.T, n, shards, rf int) *shard.Map {
	l, err := shard.New(addrs(n), shards, rf, 0)
	require.NoError(t, err)
	return shard.Initial(l, 0)
}

// apply plays the planners' steps on m the way the commands do, and
// returns the map after them and the number of replica moves.
func settle(t *testing.T, m *shard.Map) (*shard.Map, int) {
	moves := 0
	for ; ; moves++ {
		sh, from, to, ok := balanceStep(m)
		if !ok {
			break
		}
		require.Less(t, moves, 1000, "balanceStep does not converge")
		m.Placement[sh] = replace(m.Placement[sh], from, to)
		require.NoError(t, m.Validate())
	}
	for i := 0; ; i++ {
		sh, to, ok := leaderStep(m)
		if !ok {
			break
		}
		require.Less(t, i, 1000, "leaderStep does not converge")
		reps := m.Placement[sh]
		for j, r := range reps {
			if r == to {
				reps[0], reps[j] = reps[j], reps[0]
			}
		}
	}
	return m, moves
}

// TestBalanceAfterGrowth: adding members to a balanced map and settling
// leaves every member within one replica and one preferred leadership of
// every other, with the fewest moves: each new member's share, no more.
func TestBalanceAfterGrowth(t *testing.T) {
	for _, tc := range []struct{ n, add, shards, rf int }{{3, 1, 6, 3}, {3, 1, 64, 3}, {3, 2, 64, 3}, {4, 4, 256, 3}, {2, 1, 16, 1}} {
		t.Run(fmt.Sprintf("%d+%d servers %d shards RF %d", tc.n, tc.add, tc.shards, tc.rf), func(t *testing.T) {
			m := initial(t, tc.n, tc.shards, tc.rf)
			m.Servers = addrs(tc.n + tc.add)
			m, moves := settle(t, m)
			reps, leads := replicaCounts(m), leaderCounts(m)
			total := tc.shards * tc.rf
			lo, hi := total/(tc.n+tc.add), (total+tc.n+tc.add-1)/(tc.n+tc.add)
			for _, s := range m.Servers {
				require.GreaterOrEqual(t, reps[s], lo, "%s replicas", s)
				require.LessOrEqual(t, reps[s], hi, "%s replicas", s)
				require.LessOrEqual(t, leads[s], tc.shards/(tc.n+tc.add)+1, "%s leads", s)
				require.GreaterOrEqual(t, leads[s], tc.shards/(tc.n+tc.add)-1, "%s leads", s)
			}
			// Only the new members' share moved.
			require.LessOrEqual(t, moves, tc.add*hi)
		})
	}
}

// TestBalanceIsStableWhenEven: a balanced map plans nothing.
func TestBalanceIsStableWhenEven(t *testing.T) {
	m := initial(t, 3, 6, 3)
	_, _, _, ok := balanceStep(m)
	require.False(t, ok)
	_, _, ok = leaderStep(m)
	require.False(t, ok)
}

// TestDrain: draining a member moves every replica it holds, the meta
// group's too, onto members that lack one, and nothing else.
func TestDrain(t *testing.T) {
	m := initial(t, 4, 16, 3)
	gone := m.Servers[1]
	for i := 0; ; i++ {
		sh, to, ok := drainStep(m, gone)
		if !ok {
			break
		}
		require.Less(t, i, 100)
		require.NotEqual(t, gone, to)
		require.NotContains(t, m.Replicas(sh), to)
		m = m.WithReplicas(sh, replace(m.Replicas(sh), gone, to))
	}
	require.Empty(t, m.Hosted(gone))
	require.NotContains(t, m.Meta, gone)
	require.NoError(t, m.Validate())
	n := replicaCounts(m)
	for _, s := range m.Servers {
		if s != gone {
			require.InDelta(t, 16, n[s], 1, "%s", s)
		}
	}
}

// TestDrainNeedsRoom: with as many members as replicas, there is nowhere
// to drain to.
func TestDrainNeedsRoom(t *testing.T) {
	m := initial(t, 3, 3, 3)
	_, _, ok := drainStep(m, m.Servers[0])
	require.False(t, ok)
}
