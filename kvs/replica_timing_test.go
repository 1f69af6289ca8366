package kvs_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/shard"
)

func shardOf(c *replCluster, key string) int {
	l, _ := shard.New(c.Addrs(), c.Shards(), c.RF(), 0)
	return l.Shard(key)
}

// TestReplicatedSlowLeaderKeepsLeading: 250 ms of added latency each way
// on every Raft link of a shard's leader (toxiproxy) causes no election
// in 10 s with the default timing, and writes still commit.
func TestReplicatedSlowLeaderKeepsLeading(t *testing.T) {
	if testing.Short() {
		t.Skip("watches a slow leader for 10s")
	}
	c := newReplCluster(t, 3, 3, 3)
	// Server 0 is shard 0's preferred replica: wait until it leads, so
	// that no planned leadership transfer counts as an election.
	l := 0
	require.Eventually(t, func() bool { return c.Leader(0) == l }, 20*time.Second, 100*time.Millisecond)
	before, err := c.Status(l)
	require.NoError(t, err)
	term := before.Shards[0].Term
	require.NoError(t, c.Links().SetLatency(l, 250*time.Millisecond))
	cl := c.Client(t, func(cfg *client.Config) { cfg.AttemptTimeout = 5 * time.Second })
	deadline := time.Now().Add(10 * time.Second)
	writes := 0
	for i := 0; time.Now().Before(deadline); i++ {
		if key := fmt.Sprintf("slow%d", i); cl.Ring() != nil && shardOf(c, key) == 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			require.NoError(t, cl.Put(ctx, key, "v"))
			cancel()
			writes++
		}
	}
	after, err := c.Status(l)
	require.NoError(t, err)
	require.Equal(t, "Leader", after.Shards[0].State, "the slow leader lost its leadership")
	require.Equal(t, term, after.Shards[0].Term, "an election happened")
	t.Logf("%d writes in 10s; shard 0 kept leader %d in term %d", writes, l, term)
}
