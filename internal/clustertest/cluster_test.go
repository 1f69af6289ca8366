package clustertest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/internal/clustertest"
	"github.com/batchkv/batchkv/kvs"
)

// TestClusterFailsOverAndCatchesUp: the harness's own promises. A
// 3-server RF=3 cluster elects a leader and takes writes; with the leader
// stopped another leads and CaughtUp is false (a replica is missing);
// started again it catches up and every key reads back. The server hook
// runs for each start, restarts included.
func TestClusterFailsOverAndCatchesUp(t *testing.T) {
	starts := map[int]int{}
	c := clustertest.New(t, 3, 3, 1, clustertest.WithServerHook(func(i int, s *kvs.Server) {
		require.NotNil(t, s)
		starts[i]++
	}))
	require.Equal(t, map[int]int{0: 1, 1: 1, 2: 1}, starts)
	l := c.WaitLeader(0, -1)
	clustertest.PutAll(t, c.Client(t), "k", 200, clustertest.ValueOf("a"))

	c.Stop(l)
	require.Nil(t, c.Server(l))
	require.False(t, c.CaughtUp(), "a stopped replica counted as caught up")
	next := c.WaitLeader(0, l)
	require.NotEqual(t, l, next)

	c.Start(l)
	require.Equal(t, 2, starts[l])
	require.Eventually(t, c.CaughtUp, 15*time.Second, 50*time.Millisecond)
	clustertest.CheckAll(t, c.Client(t), "k", 200, clustertest.ValueOf("a"))
}

// TestIsolatedLeaderIsReplaced: Isolate cuts a leader's Raft links, so
// the other two elect one of themselves; restored, the cluster has one
// leader again.
func TestIsolatedLeaderIsReplaced(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for an election")
	}
	c := clustertest.New(t, 3, 3, 1)
	l := c.WaitLeader(0, -1)
	c.Isolate(l, true)
	require.Eventually(t, func() bool {
		for i := range c.Addrs() {
			if st, err := c.Status(i); i != l && err == nil && st.Shards[0].State == "Leader" {
				return true
			}
		}
		return false
	}, 15*time.Second, 50*time.Millisecond, "no other server led with the leader cut off")
	c.Isolate(l, false)
	c.WaitLeader(0, -1)
}
