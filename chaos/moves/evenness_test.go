package moves

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/wire"
)

// TestEvennessTally: a member with fewer keys or leaderships than its
// share is the worst, by how far it is off; a reading in which a shard
// has no leader, or two (a hand-over seen from both sides), is unsettled.
func TestEvennessTally(t *testing.T) {
	servers := []string{"a", "b"}
	led := func(sh, keys int) wire.ShardStatus { return wire.ShardStatus{Shard: sh, State: "Leader", Keys: keys} }
	follows := func(sh, keys int) wire.ShardStatus { return wire.ShardStatus{Shard: sh, State: "Follower", Keys: keys} }

	even := tallyEvenness(servers, 2, [][]wire.ShardStatus{{led(0, 100), follows(1, 100)}, {follows(0, 100), led(1, 100)}})
	require.Zero(t, even.keysOff)
	require.Zero(t, even.leadsOff)
	require.Empty(t, even.unsettled)

	// b leads both shards and holds fewer keys: a is 100% off its share
	// of leaders, and both 20% off their share of keys.
	uneven := tallyEvenness(servers, 2, [][]wire.ShardStatus{{follows(0, 120), follows(1, 120)}, {led(0, 80), led(1, 80)}})
	require.InDelta(t, 1.0, uneven.leadsOff, 1e-9)
	require.InDelta(t, 0.2, uneven.keysOff, 1e-9)
	require.Empty(t, uneven.unsettled)
	require.Equal(t, " a 0 b 2", uneven.leads)

	moving := tallyEvenness(servers, 2, [][]wire.ShardStatus{{led(0, 100), led(1, 100)}, {led(0, 100), follows(1, 100)}})
	require.Equal(t, "shard 0 has 2 leaders", moving.unsettled)
	none := tallyEvenness(servers, 2, [][]wire.ShardStatus{{follows(0, 100), led(1, 100)}, {follows(0, 100), follows(1, 100)}})
	require.Equal(t, "shard 0 has 0 leaders", none.unsettled)
}
