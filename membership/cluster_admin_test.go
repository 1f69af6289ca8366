package membership_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/internal/clustertest"
	"github.com/batchkv/batchkv/membership"
	"github.com/batchkv/batchkv/wire"
)

// TestMembershipNeedsAdminCertificate: with TLS, a client certificate may
// read the map but not change the membership: add-server with it fails
// with a clear error and changes nothing (no epoch, no replica on the
// new server). With an admin certificate the same command works.
func TestMembershipNeedsAdminCertificate(t *testing.T) {
	if testing.Short() {
		t.Skip("needs elections")
	}
	c := membershipCluster(t, clustertest.WithTLS())
	c.Start(3)
	asClient := &membership.Driver{Admin: c.Admin(), Seeds: c.Addrs()[:3], CatchUp: 5 * time.Second, RPCTimeout: 3 * time.Second}
	t.Cleanup(func() { _ = asClient.Close() })
	before, err := asClient.Map()
	require.NoError(t, err, "a client certificate may read the map")
	_, err = asClient.AddServer(c.Addrs()[3])
	require.ErrorContains(t, err, "membership changes are for admin and node certificates")
	_, err = c.Admin().Membership(c.Addrs()[0], wire.MembershipRequest{Op: wire.PublishMap, Map: before.Wire()}, 3*time.Second)
	require.ErrorContains(t, err, `role "client"`)

	drv := c.Driver(t, nil)
	after, err := drv.Map()
	require.NoError(t, err)
	require.Equal(t, before.Epoch, after.Epoch, "the refused add changed the map")
	st, err := c.Status(3)
	require.NoError(t, err)
	require.Empty(t, st.Shards, "the refused add opened a replica on the new server")

	sum, err := drv.AddServer(c.Addrs()[3])
	require.NoError(t, err, "an admin certificate may change membership")
	require.NotEmpty(t, sum.Moves)
}

// TestReconcileClosesStrayMetaReplica: a replica of the meta group on a
// member that the map does not name and the group does not list (as a
// move whose close failed leaves behind) is closed by the next Reconcile,
// and the meta group still serves.
func TestReconcileClosesStrayMetaReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("needs elections")
	}
	c := membershipCluster(t)
	drv := c.Driver(t, nil)
	c.Start(3)
	_, err := drv.AddServer(c.Addrs()[3])
	require.NoError(t, err)
	m, err := drv.Map()
	require.NoError(t, err)
	i := slices.IndexFunc(c.Addrs(), func(a string) bool { return !slices.Contains(m.Meta, a) })
	require.GreaterOrEqual(t, i, 0, "every server holds the meta group")
	meta := wire.MetaShard(m.Shards)
	stray := wire.MembershipRequest{Op: wire.OpenReplica, Shard: meta, Peers: m.Meta}
	admin := drv.Admin
	_, err = admin.Membership(c.Addrs()[i], stray, 3*time.Second)
	require.NoError(t, err)
	rep, err := admin.Membership(c.Addrs()[i], wire.MembershipRequest{Op: wire.Members, Shard: meta}, 3*time.Second)
	require.NoError(t, err)
	require.NotEmpty(t, rep.State, "the stray replica did not open")

	require.NoError(t, drv.Reconcile())
	rep, err = admin.Membership(c.Addrs()[i], wire.MembershipRequest{Op: wire.Members, Shard: meta}, 3*time.Second)
	require.NoError(t, err)
	require.Empty(t, rep.State, "Reconcile left the stray meta replica running")
	after, err := drv.Map()
	require.NoError(t, err)
	require.Equal(t, m.Epoch, after.Epoch)
}

// TestLeaderAskedToLeaveHandsOver: a shard's leader asked to remove
// itself (as a move's last step asks when the hand-over it made did not
// stick) hands leadership to another voter and answers NotLeader; it
// stays a member, and the new leader then removes it. A hand-over that
// does not complete within an election timeout (Raft's bound on a
// leadership transfer, which a busy machine running the other tests can
// exceed) is an error that changes nothing, and the test asks again, as
// the membership driver does.
func TestLeaderAskedToLeaveHandsOver(t *testing.T) {
	if testing.Short() {
		t.Skip("needs elections")
	}
	c := membershipCluster(t)
	admin := c.Admin()
	old := c.Leader(0)
	require.GreaterOrEqual(t, old, 0)
	leave := wire.MembershipRequest{Op: wire.RemoveMember, Shard: 0, Addr: c.Addrs()[old]}
	var rep wire.MembershipReply
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; {
		rep, err = admin.Membership(c.Addrs()[old], leave, 5*time.Second)
		if err == nil || !strings.Contains(err.Error(), "could not hand leadership over") || time.Now().After(deadline) {
			break
		}
		t.Logf("asked again: %v", err)
	}
	require.NoError(t, err)
	require.True(t, rep.NotLeader, "the leader removed itself, or kept leading")
	var now int
	require.Eventually(t, func() bool {
		now = c.Leader(0)
		return now >= 0 && now != old
	}, 5*time.Second, 20*time.Millisecond, "leadership did not move")
	rep, err = admin.Membership(c.Addrs()[now], wire.MembershipRequest{Op: wire.Members, Shard: 0}, 5*time.Second)
	require.NoError(t, err)
	require.Len(t, rep.Members, 3, "the old leader left the group before the new leader removed it")
	// Leadership may move again after the hand-over (an election, or,
	// the old leader being the shard's preferred replica, a hand-back to
	// it: failover.HandBack), so a replica seen leading may answer
	// NotLeader (once in a fresh clone's go test ./..., 2026-11-29): the
	// leader found then is asked, and the old one, asked to leave again,
	// hands over again.
	for deadline := time.Now().Add(10 * time.Second); ; {
		rep, err = admin.Membership(c.Addrs()[now], leave, 5*time.Second)
		if err != nil && !strings.Contains(err.Error(), "could not hand leadership over") {
			require.NoError(t, err)
		}
		if err == nil && !rep.NotLeader || time.Now().After(deadline) {
			break
		}
		t.Logf("%s no longer leads: asked again", c.Addrs()[now])
		require.Eventually(t, func() bool { now = c.Leader(0); return now >= 0 }, 5*time.Second, 20*time.Millisecond)
	}
	require.NoError(t, err)
	require.False(t, rep.NotLeader, "no leader removed the old one in 10 s")
	require.Len(t, rep.Members, 2)
}

// TestPublishedMapComesFromMetaGroup: a map handed to a server (by
// PublishMap, or with CloseReplica) only tells it that the map changed;
// it adopts what the meta group holds. A forged map with a far-ahead
// epoch and another placement is not adopted, and the server still
// follows the real changes.
func TestPublishedMapComesFromMetaGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("needs elections")
	}
	c := membershipCluster(t)
	admin := c.Admin()
	drv := c.Driver(t, nil)
	real, err := drv.Map()
	require.NoError(t, err)
	// The forged map takes shard 0 off server 1, which the forged map's
	// CloseReplica then asks to close its replica.
	forged := real.Clone()
	forged.Epoch += 100
	forged.Servers = append(forged.Servers, c.Addrs()[3])
	forged.Placement[0] = []string{c.Addrs()[2], c.Addrs()[3], c.Addrs()[0]}
	require.NoError(t, forged.Validate())
	for _, op := range []wire.MembershipOp{wire.PublishMap, wire.CloseReplica} {
		rep, err := admin.Membership(c.Addrs()[1], wire.MembershipRequest{Op: op, Shard: 0, Map: forged.Wire()}, 5*time.Second)
		if op == wire.CloseReplica {
			require.ErrorContains(t, err, "still places shard 0 here")
			continue
		}
		require.NoError(t, err)
		require.Equal(t, real.Epoch, rep.Map.Epoch, "the server adopted a map the meta group never committed")
	}
	l, err := admin.Layout(c.Addrs()[1], time.Second)
	require.NoError(t, err)
	require.Equal(t, real.Epoch, l.Epoch)
	require.Equal(t, real.Placement[0], l.Placement[0])

	c.Start(3)
	_, err = drv.AddServer(c.Addrs()[3])
	require.NoError(t, err)
	now, err := drv.Map()
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		l, err := admin.Layout(c.Addrs()[1], time.Second)
		return err == nil && l.Epoch == now.Epoch
	}, 5*time.Second, 50*time.Millisecond, "the server did not follow the real change")
}
