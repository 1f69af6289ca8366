package membership_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/clustertest"
	"github.com/batchkv/batchkv/internal/linz"
	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/membership"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// membershipCluster is 4 servers, RF=3 and 6 shards, of which the first
// 3 start as members and the 4th joins as a spare.
func membershipCluster(t *testing.T, opts ...clustertest.Option) *clustertest.Cluster {
	return membershipClusterRF(t, 3, opts...)
}

// membershipClusterRF is membershipCluster at replication factor rf.
func membershipClusterRF(t *testing.T, rf int, opts ...clustertest.Option) *clustertest.Cluster {
	c := clustertest.New(t, 4, rf, 6, append([]clustertest.Option{clustertest.WithInitial(3)}, opts...)...)
	c.WaitLeaders()
	return c
}

// checkedLoad runs a porcupine-checked load on c's hot keys, conditional
// puts among its ops (linz.DriveCAS), until the returned function is
// called, which returns the history.
func checkedLoad(t *testing.T, c *clustertest.Cluster) (stop func() []porcupine.Operation, answered *atomic.Int64) {
	h := linz.NewHistory()
	done := make(chan struct{})
	finished := make(chan struct{})
	answered = &atomic.Int64{}
	cl := c.Client(t, func(cfg *client.Config) { cfg.AttemptTimeout = time.Second })
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	go func() {
		defer close(finished)
		linz.DriveCAS(6, 3, keyNames(12), 2*time.Millisecond, 10*time.Second, cl.Do, h, seed, done,
			func(n int) { answered.Add(int64(n)) })
	}()
	return func() []porcupine.Operation {
		close(done)
		<-finished
		return h.Ops()
	}, answered
}

// requireConverged waits until every replica of every shard in m has
// applied the same log and holds the same pairs.
func requireConverged(t *testing.T, c *clustertest.Cluster, m *shard.Map) {
	t.Helper()
	admin := c.Admin()
	why := ""
	converged := func() bool {
		digests := map[int]map[uint64]bool{}
		for _, addr := range m.Servers {
			st, err := admin.Status(addr, wire.StatusRequest{Digest: true}, 5*time.Second)
			if err != nil {
				why = err.Error()
				return false
			}
			for _, s := range st.Shards {
				if !slices.Contains(m.Placement[s.Shard], addr) {
					why = fmt.Sprintf("%s still has a replica of shard %d", addr, s.Shard)
					return false
				}
				if digests[s.Shard] == nil {
					digests[s.Shard] = map[uint64]bool{}
				}
				digests[s.Shard][s.Digest^s.Applied<<32] = true
			}
		}
		for sh := range m.Shards {
			if len(digests[sh]) != 1 {
				why = fmt.Sprintf("shard %d: replicas differ in (applied, digest): %v", sh, digests[sh])
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(20 * time.Second); !converged(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("replicas did not converge: %s", why)
		}
	}
}

// getByShard reads keys prefix0..prefix{n-1} through cl and calls check
// with each key's shard under m, its index, the key and its result.
func getByShard(t *testing.T, cl *client.Client, m *shard.Map, prefix string, n int, check func(sh, i int, key string, r wire.Result)) {
	t.Helper()
	layout, err := shard.New(m.Servers, m.Shards, m.RF, m.VirtualNodes)
	require.NoError(t, err)
	clustertest.GetAll(t, cl, prefix, n, func(i int, key string, r wire.Result) { check(layout.Shard(key), i, key, r) })
}

// TestMembershipLinearizable: under a checked load and with 3,000 keys
// written before, a 4th server joins and is added (it takes its share of
// replicas and leaders), then one of the original servers is removed and
// stopped, at RF=3 (on disk) and at RF=1 in memory (one-replica groups
// whose logs are in memory, and whose only replica moves; server 0 also
// holds the meta group's only replica). The history must be
// linearizable, every key must read back, the map must place every shard
// on RF members, and the replicas of each shard must hold the same pairs.
func TestMembershipLinearizable(t *testing.T) {
	if testing.Short() {
		t.Skip("moves shards under load for about 15s")
	}
	for _, tc := range []struct {
		name     string
		rf       int
		inMemory bool
	}{{"RF=3", 3, false}, {"RF=1 in memory", 1, true}} {
		t.Run(tc.name, func(t *testing.T) {
			rf := tc.rf
			var opts []clustertest.Option
			if tc.inMemory {
				opts = append(opts, clustertest.WithInMemory())
			}
			c := membershipClusterRF(t, rf, opts...)
			bulk := c.Client(t)
			clustertest.PutAll(t, bulk, "bulk", 3000, clustertest.ValueOf("m"))
			stop, answered := checkedLoad(t, c)
			time.Sleep(500 * time.Millisecond)
			drv := c.Driver(t, nil)
			c.Start(3)
			sum, err := drv.AddServer(c.Addrs()[3])
			require.NoError(t, err)
			require.NotEmpty(t, sum.Moves, "the new server took no replica")
			before := answered.Load()
			time.Sleep(500 * time.Millisecond)
			_, err = drv.RemoveServer(c.Addrs()[0])
			require.NoError(t, err)
			c.Stop(0)
			time.Sleep(500 * time.Millisecond)
			ops := stop()
			t.Logf("%d ops answered (%d before the removal)", answered.Load(), before)
			require.Greater(t, answered.Load(), before, "no op was answered during the removal")
			require.Equal(t, porcupine.Ok, clustertest.Linearizable(t, ops))

			m, err := drv.Map()
			require.NoError(t, err)
			require.NotContains(t, m.Servers, c.Addrs()[0])
			require.Contains(t, m.Servers, c.Addrs()[3])
			for sh, reps := range m.Placement {
				require.Len(t, reps, rf, "shard %d", sh)
				require.NotContains(t, reps, c.Addrs()[0], "shard %d", sh)
			}
			require.NotContains(t, m.Meta, c.Addrs()[0])
			clustertest.CheckAll(t, c.Client(t, func(cfg *client.Config) { cfg.Servers = c.Addrs()[1:] }), "bulk", 3000, clustertest.ValueOf("m"))
			requireConverged(t, c, m)
		})
	}
}

// TestReplaceDeadServer: at RF=3 with 3 members, one dies for good. A
// new server joins and is added (with the dead one still a member, its
// share comes partly off the dead one), then the dead one is removed:
// every shard it still held gets its third replica on the new server,
// copied while a checked load runs. Every shard ends on 3 live replicas
// that agree, every key reads back, and the history is linearizable.
func TestReplaceDeadServer(t *testing.T) {
	if testing.Short() {
		t.Skip("moves shards under load")
	}
	c, drv, stop, before := deadMember(t)
	_, err := drv.RemoveServer(c.Addrs()[1])
	require.ErrorContains(t, err, "would leave 2 servers for 3 replicas", "with RF members, the new server comes first")
	c.Start(3)
	added, err := drv.AddServer(c.Addrs()[3])
	require.NoError(t, err)
	removed, err := drv.RemoveServer(c.Addrs()[1])
	require.NoError(t, err)
	// The control of TestReplaceServerMovesEachReplicaOnce's check: this
	// way moves some replicas twice.
	moves := append(added.Moves, removed.Moves...)
	_, err = membership.MovedOnce(before, c.Addrs()[1], c.Addrs()[3], moves)
	require.ErrorContains(t, err, "not one of the", "add-server then remove-server moved each replica once, and only those")
	t.Logf("add-server then remove-server: %d moves", len(moves))
	requireReplaced(t, c, drv, stop)
}

// TestReplaceServerMovesEachReplicaOnce: at RF=3 with 3 members one dies
// for good, and ReplaceServer puts each of its replicas on a new server,
// one move each, under a checked load: the history is linearizable,
// every key reads back, every shard ends on 3 live replicas that agree.
func TestReplaceServerMovesEachReplicaOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("moves shards under load")
	}
	c, drv, stop, before := deadMember(t)
	_, err := drv.ReplaceServer(c.Addrs()[1], c.Addrs()[0])
	require.ErrorContains(t, err, "holds a replica of shard", "a member that holds the same shards")
	_, err = drv.ReplaceServer(c.Addrs()[1], c.Addrs()[1])
	require.ErrorContains(t, err, "cannot replace itself")
	c.Start(3)
	sum, err := drv.ReplaceServer(c.Addrs()[1], c.Addrs()[3])
	require.NoError(t, err)
	got, err := membership.MovedOnce(before, c.Addrs()[1], c.Addrs()[3], sum.Moves)
	require.NoError(t, err)
	t.Log(got)
	again, err := drv.ReplaceServer(c.Addrs()[1], c.Addrs()[3])
	require.NoError(t, err, "run again once done: nothing is left but the leaders")
	require.Empty(t, again.Moves)
	t.Logf("replace-server: %d moves in %v", len(sum.Moves), sum.Took)
	requireReplaced(t, c, drv, stop)
}

// TestPlansLeaveDownMemberOut: a member that holds nothing dies. A
// rebalance moves nothing to it and succeeds (planned as if it were up,
// its share would move to it and fail); removing another member, whose
// groups only the dead one lacks, is refused before anything changes;
// the dead one is then removed without a move.
func TestPlansLeaveDownMemberOut(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and stops a cluster's servers")
	}
	c := membershipCluster(t)
	var (
		mu    sync.Mutex
		lines []string
	)
	drv := c.Driver(t, func(line string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, line)
	})
	dead := c.Addrs()[3]
	c.Start(3)
	require.NoError(t, drv.AddMember(dead))
	c.Stop(3)

	sum, err := drv.Rebalance()
	require.NoError(t, err)
	require.Empty(t, sum.Moves)
	m, err := drv.Map()
	require.NoError(t, err)
	require.Contains(t, m.Servers, dead)
	require.Empty(t, m.Hosted(dead))
	require.NotContains(t, m.Meta, dead)
	mu.Lock()
	said := slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, dead+" does not answer") })
	mu.Unlock()
	require.True(t, said, "the command says who is down")

	_, err = drv.RemoveServer(c.Addrs()[0])
	require.ErrorContains(t, err, "that no live member lacks (down: "+dead+")")
	same, err := drv.Map()
	require.NoError(t, err)
	require.Equal(t, m.Epoch, same.Epoch, "a refused removal changes nothing")

	removed, err := drv.RemoveServer(dead)
	require.NoError(t, err)
	require.Empty(t, removed.Moves)
	final, err := drv.Map()
	require.NoError(t, err)
	require.ElementsMatch(t, c.Addrs()[:3], final.Servers)
	clustertest.PutAll(t, c.Client(t), "after", 100, clustertest.ValueOf("p"))
	clustertest.CheckAll(t, c.Client(t), "after", 100, clustertest.ValueOf("p"))
}

// deadMember is membershipCluster with 2,000 keys written, a checked
// load running, and server 1 stopped for good; it returns a driver, the
// load's stop, and the map before server 1 died.
func deadMember(t *testing.T) (*clustertest.Cluster, *membership.Driver, func() []porcupine.Operation, *shard.Map) {
	c := membershipCluster(t)
	clustertest.PutAll(t, c.Client(t), "bulk", 2000, clustertest.ValueOf("d"))
	stop, _ := checkedLoad(t, c)
	drv := c.Driver(t, nil)
	before, err := drv.Map()
	require.NoError(t, err)
	c.Stop(1) // for good
	return c, drv, stop, before
}

// requireReplaced stops the checked load and requires that server 1 was
// replaced by server 3: a linearizable history, a map of 0, 2 and 3 that
// places every shard on three of them, every key read back, and every
// shard's replicas alike.
func requireReplaced(t *testing.T, c *clustertest.Cluster, drv *membership.Driver, stop func() []porcupine.Operation) {
	t.Helper()
	ops := stop()
	require.Equal(t, porcupine.Ok, clustertest.Linearizable(t, ops))
	final, err := drv.Map()
	require.NoError(t, err)
	require.ElementsMatch(t, []string{c.Addrs()[0], c.Addrs()[2], c.Addrs()[3]}, final.Servers)
	for sh, reps := range final.Placement {
		require.Len(t, reps, 3, "shard %d", sh)
		require.NotContains(t, reps, c.Addrs()[1], "shard %d", sh)
	}
	require.NotContains(t, final.Meta, c.Addrs()[1])
	clustertest.CheckAll(t, c.Client(t, func(cfg *client.Config) { cfg.Servers = []string{c.Addrs()[0]} }), "bulk", 2000, clustertest.ValueOf("d"))
	requireConverged(t, c, final)
}

// TestMoveKilledMidway stops the destination of a move while it catches
// up (the move rolls back: the map and the group are as before), and the
// source, which leads the shard, once the destination is a voter (the
// move completes without it). Both under a checked load, which must stay
// linearizable; afterwards rebalance and reconcile leave a clean map.
func TestMoveKilledMidway(t *testing.T) {
	if testing.Short() {
		t.Skip("moves shards under load")
	}
	c := membershipCluster(t)
	bulk := c.Client(t)
	clustertest.PutAll(t, bulk, "bulk", 2000, clustertest.ValueOf("k"))
	stop, _ := checkedLoad(t, c)
	c.Start(3)
	drv := c.Driver(t, nil)
	// Membership first: no replica moves yet.
	m, err := drv.Map()
	require.NoError(t, err)
	require.NoError(t, drv.AddMember(c.Addrs()[3]))

	// The destination dies after it was added as a learner.
	const sh = 0
	from := m.Placement[sh][1]
	killer := c.Driver(t, func(line string) {
		if strings.Contains(line, "added as a learner") {
			c.Stop(3)
		}
	})
	_, _, err = killer.Move(sh, from, c.Addrs()[3])
	require.Error(t, err, "a move whose destination died must fail")
	after, err := drv.Map()
	require.NoError(t, err)
	require.Equal(t, m.Placement[sh], after.Placement[sh], "a rolled-back move changed the map")

	// The source, leading the shard, dies once the destination votes.
	c.Start(3)
	lead := c.WaitLeader(sh, -1)
	killer = c.Driver(t, func(line string) {
		if strings.Contains(line, "is a voter") {
			c.Stop(lead)
		}
	})
	next, mv, err := killer.Move(sh, c.Addrs()[lead], c.Addrs()[3])
	require.NoError(t, err, "a move whose source died after the copy must complete")
	t.Logf("moved shard %d in %v", sh, mv.Took)
	require.Contains(t, next.Placement[sh], c.Addrs()[3])
	require.NotContains(t, next.Placement[sh], c.Addrs()[lead])

	ops := stop()
	require.Equal(t, porcupine.Ok, clustertest.Linearizable(t, ops))
	// The source comes back with its old replica, which reconcile closes.
	c.Start(lead)
	require.NoError(t, drv.Reconcile())
	_, err = drv.Rebalance()
	require.NoError(t, err)
	final, err := drv.Map()
	require.NoError(t, err)
	clustertest.CheckAll(t, c.Client(t), "bulk", 2000, clustertest.ValueOf("k"))
	requireConverged(t, c, final)
}

// TestMembershipBadInput: bad membership requests get a clear error (or
// NotLeader where only a leader may act) and change nothing: the map
// keeps its epoch, every replica stays, and the store keeps serving.
func TestMembershipBadInput(t *testing.T) {
	if testing.Short() {
		t.Skip("needs elections")
	}
	c := membershipCluster(t)
	admin := c.Admin()
	call := func(addr string, req wire.MembershipRequest) (wire.MembershipReply, error) {
		return admin.Membership(addr, req, 5*time.Second)
	}
	l, err := admin.Layout(c.Addrs()[0], time.Second)
	require.NoError(t, err)
	valid, err := shard.FromWire(l)
	require.NoError(t, err)

	_, err = call(c.Addrs()[0], wire.MembershipRequest{Op: wire.Members, Shard: -1})
	require.ErrorContains(t, err, "shard -1")
	_, err = call(c.Addrs()[0], wire.MembershipRequest{Op: wire.Members, Shard: 99})
	require.ErrorContains(t, err, "shard 99")
	_, err = call(c.Addrs()[0], wire.MembershipRequest{Op: 99, Shard: 0})
	require.ErrorContains(t, err, "unknown membership op")

	broken := valid.Wire()
	broken.Epoch++
	broken.Placement[2] = nil // a shard with no replica
	_, err = call(c.Addrs()[0], wire.MembershipRequest{Op: wire.PublishMap, Map: broken})
	require.ErrorContains(t, err, "shard 2 has 0 replicas")
	for _, leader := range c.Addrs()[:3] {
		_, err = call(leader, wire.MembershipRequest{Op: wire.CommitMap, Shard: wire.MetaShard(6), Expect: valid.Epoch, Map: broken})
		require.ErrorContains(t, err, "shard 2 has 0 replicas")
	}
	stale := valid.Clone()
	stale.Epoch = valid.Epoch + 5
	untilLed(t, "the meta shard", func() (led bool) {
		for _, addr := range c.Addrs()[:3] {
			rep, err := call(addr, wire.MembershipRequest{Op: wire.CommitMap, Shard: wire.MetaShard(6), Expect: valid.Epoch + 3, Map: stale.Wire()})
			require.NoError(t, err)
			if !rep.NotLeader {
				require.True(t, rep.Stale, "a compare-and-set from the wrong epoch must fail")
				led = true
			}
		}
		return led
	})

	_, err = call(c.Addrs()[0], wire.MembershipRequest{Op: wire.CloseReplica, Shard: 0})
	require.ErrorContains(t, err, "still places shard 0 here")
	followers := 0
	untilLed(t, "shard 0", func() bool {
		followers = 0
		for _, addr := range c.Addrs()[:3] {
			rep, err := call(addr, wire.MembershipRequest{Op: wire.AddLearner, Shard: 0, Addr: "127.0.0.1:1"})
			require.NoError(t, err)
			if rep.NotLeader {
				followers++
			} else {
				// The leader took it: undo, so that the check below holds.
				_, err = call(addr, wire.MembershipRequest{Op: wire.RemoveMember, Shard: 0, Addr: "127.0.0.1:1"})
				require.NoError(t, err)
			}
		}
		return followers < 3 // a round in which no replica led proves nothing
	})
	require.Equal(t, 2, followers, "only the leader may change a group")

	for _, addr := range c.Addrs()[:3] {
		l, err := admin.Layout(addr, time.Second)
		require.NoError(t, err)
		require.Equal(t, valid.Epoch, l.Epoch, "%s changed its map", addr)
		st, err := c.Status(slices.Index(c.Addrs(), addr))
		require.NoError(t, err)
		require.Len(t, st.Shards, 6, "%s lost a replica", addr)
	}
	clustertest.PutAll(t, c.Client(t), "after", 100, clustertest.ValueOf("b"))
	clustertest.CheckAll(t, c.Client(t), "after", 100, clustertest.ValueOf("b"))

	// Replicas in memory only at RF=1: a restarted voter that forgot its
	// log and vote could help elect two leaders in one term.
	for _, tc := range []struct {
		cfg  kvs.Config
		want string
	}{
		{kvs.Config{Self: "127.0.0.1:1", Join: c.Addrs()[0], InMemory: true}, "3 replicas per shard need a data dir"},
		{kvs.Config{Self: "127.0.0.1:1", Peers: []string{"127.0.0.1:1"}, RF: 3, InMemory: true}, "InMemory with 3 replicas"},
		{kvs.Config{Self: "127.0.0.1:1", Peers: []string{"127.0.0.1:1"}, InMemory: true, DataDir: t.TempDir()}, "InMemory and a DataDir"},
	} {
		srv, err := kvs.New(tc.cfg)
		if err == nil {
			_ = srv.Close()
		}
		require.ErrorContains(t, err, tc.want)
	}
}

// keyNames returns key0..key{n-1}.
func keyNames(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("key%d", i)
	}
	return keys
}

// untilLed runs round, in which each of a group's replicas is asked in
// turn, until one of them answered as its leader: a round in which none
// did (an election under the suite's load) proves nothing. It gives up
// after 10 s.
func untilLed(t *testing.T, group string, round func() (led bool)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !round() {
		require.True(t, time.Now().Before(deadline), "no replica of %s answered as its leader for 10 s", group)
		t.Logf("no replica of %s answered as its leader: again", group)
		time.Sleep(100 * time.Millisecond)
	}
}
