package membership_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/clustertest"
	"github.com/batchkv/batchkv/wire"
)

// TestInMemoryServerRestartsEmpty: in a memory-only cluster (one-replica
// groups kept in memory) whose map has changed since it started, server
// 0, which holds the meta group's only replica, is stopped and started
// again with the same flags. It keeps nothing, so it comes back from the
// cluster's current map: the shards that map places on it serve again,
// empty, and so does the meta group, holding that map. The keys of the
// other servers' shards read back, every key can be written, and a
// further membership change (removing server 0, whose meta replica moves
// last) works.
func TestInMemoryServerRestartsEmpty(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a server of a changed cluster")
	}
	c := membershipClusterRF(t, 1, clustertest.WithInMemory())
	drv := c.Driver(t, nil)
	c.Start(3)
	_, err := drv.AddServer(c.Addrs()[3])
	require.NoError(t, err)
	before, err := drv.Map()
	require.NoError(t, err)
	require.Greater(t, before.Epoch, uint64(1))
	require.Equal(t, []string{c.Addrs()[0]}, before.Meta)
	lost := before.Hosted(c.Addrs()[0])
	require.NotEmpty(t, lost, "server 0 kept no shard")
	cl := c.Client(t)
	clustertest.PutAll(t, cl, "old", 600, clustertest.ValueOf("o"))

	c.Stop(0)
	c.Start(0)
	require.NoError(t, drv.Close())
	drv = c.Driver(t, nil)
	after, err := drv.Map()
	require.NoError(t, err)
	require.Equal(t, before.Epoch, after.Epoch, "the reborn meta group holds another map")
	require.Equal(t, before.Placement, after.Placement)

	gone := 0
	getByShard(t, cl, before, "old", 600, func(sh, i int, key string, r wire.Result) {
		if slices.Contains(lost, sh) {
			require.Equal(t, wire.StatusNotFound, r.Status, "key %s of a shard on the restarted server", key)
			gone++
			return
		}
		require.Equal(t, wire.StatusOK, r.Status, "key %s", key)
		require.Equal(t, clustertest.ValueOf("o")(i), r.Value, "key %s", key)
	})
	require.Positive(t, gone)
	// The spare, which joined with -join, comes back the same way.
	c.Stop(3)
	c.Start(3)
	clustertest.PutAll(t, cl, "new", 600, clustertest.ValueOf("n"))
	// The meta group moves first, and the map is then read at its new
	// leader: the reborn meta group must have written its map into its
	// log, or that read finds the initial map (server 1 started with it).
	moved, _, err := drv.Move(before.Shards, c.Addrs()[0], c.Addrs()[1])
	require.NoError(t, err)
	require.Equal(t, []string{c.Addrs()[1]}, moved.Meta)
	require.Equal(t, before.Epoch+1, moved.Epoch)
	_, err = drv.RemoveServer(c.Addrs()[0])
	require.NoError(t, err)
	c.Stop(0)
	final, err := drv.Map()
	require.NoError(t, err)
	require.Greater(t, final.Epoch, before.Epoch)
	require.Equal(t, []string{c.Addrs()[1], c.Addrs()[2], c.Addrs()[3]}, final.Servers)
	clustertest.CheckAll(t, c.Client(t, func(cfg *client.Config) { cfg.Servers = c.Addrs()[1:] }), "new", 600, clustertest.ValueOf("n"))
}

// TestInMemorySourceKilledMidMove: at RF=1 in memory, the source of a
// move dies once the destination votes (the group has two voters and no
// quorum) and starts again at once. Reborn, it bootstraps its other
// shards empty but rejoins the moving one, whose group lives on at the
// destination with the data: the move completes and every key of that
// shard reads back.
func TestInMemorySourceKilledMidMove(t *testing.T) {
	if testing.Short() {
		t.Skip("moves a shard")
	}
	c := membershipClusterRF(t, 1, clustertest.WithInMemory())
	c.Start(3)
	drv := c.Driver(t, nil)
	require.NoError(t, drv.AddMember(c.Addrs()[3]))
	m, err := drv.Map()
	require.NoError(t, err)
	sh := slices.IndexFunc(m.Placement, func(reps []string) bool { return reps[0] == c.Addrs()[1] })
	require.GreaterOrEqual(t, sh, 0)
	cl := c.Client(t)
	clustertest.PutAll(t, cl, "k", 1200, clustertest.ValueOf("k"))

	killer := c.Driver(t, func(line string) {
		if strings.Contains(line, "is a voter") {
			c.Stop(1)
			c.Start(1)
		}
	})
	next, _, err := killer.Move(sh, c.Addrs()[1], c.Addrs()[3])
	require.NoError(t, err, "the move did not complete after its source was reborn")
	require.Equal(t, []string{c.Addrs()[3]}, next.Placement[sh])

	kept := 0
	getByShard(t, cl, m, "k", 1200, func(s, i int, key string, r wire.Result) {
		if s == sh {
			require.Equal(t, wire.StatusOK, r.Status, "key %s of the moved shard", key)
			require.Equal(t, clustertest.ValueOf("k")(i), r.Value)
			kept++
		}
	})
	require.Positive(t, kept)
}
