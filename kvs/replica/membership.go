package replica

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/wire"
)

// MembershipTimeout bounds one Raft configuration change.
const MembershipTimeout = 10 * time.Second

// Placement returns the shard's replicas as this replica last learned
// them from the map, preferred leader first.
func (g *Group) Placement() []string { return *g.place.Load() }

// SetPlacement records the shard's replicas from a new map.
func (g *Group) SetPlacement(replicas []string) {
	g.place.Store(new(slices.Clone(replicas)))
}

// Members returns the shard's latest Raft configuration as this replica
// knows it (not necessarily committed).
func (g *Group) Members() []wire.Member {
	f := g.raft.GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	var out []wire.Member
	for _, s := range f.Configuration().Servers {
		out = append(out, wire.Member{Addr: string(s.Address), Voter: s.Suffrage == raft.Voter})
	}
	return out
}

// ChangeMembers applies one membership change at the shard's leader:
// op wire.AddLearner adds addr as a non-voter that receives the log (by
// snapshot first) but does not count toward commits; wire.Promote makes
// it a voter; wire.RemoveMember takes it out; wire.TransferLeader hands
// leadership to it. It returns ErrNotLeader when this replica does not
// lead.
func (g *Group) ChangeMembers(op wire.MembershipOp, addr string) error {
	if g.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	id, a := raft.ServerID(addr), raft.ServerAddress(addr)
	var f raft.Future
	switch op {
	case wire.AddLearner:
		f = g.raft.AddNonvoter(id, a, 0, MembershipTimeout)
	case wire.Promote:
		f = g.raft.AddVoter(id, a, 0, MembershipTimeout)
	case wire.RemoveMember:
		if addr == g.self {
			return g.handOverToLeave()
		}
		f = g.raft.RemoveServer(id, 0, MembershipTimeout)
	case wire.TransferLeader:
		if addr == g.self {
			return nil // it leads already
		}
		// No lease read may be served once another replica may lead.
		g.lease.GiveUp()
		defer g.lease.Resume()
		f = g.raft.LeadershipTransferToServer(id, a)
	default:
		return fmt.Errorf("replica: membership op %d is not a Raft change", op)
	}
	if err := g.await(f); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return ErrNotLeader
		}
		return fmt.Errorf("replica: shard %d: %s %s: %w", g.shard, op, addr, err)
	}
	return nil
}

// handOverToLeave answers a leader's being asked to remove itself: it
// hands leadership to the voter whose log is most up to date, and
// answers ErrNotLeader, so that the caller asks the new leader. This is
// how a move finishes when the hand-over it asked for did not stick (the
// new replica lost its election, and the old leader was elected again).
func (g *Group) handOverToLeave() error {
	g.lease.GiveUp()
	defer g.lease.Resume()
	if err := g.await(g.raft.LeadershipTransfer()); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return ErrNotLeader
		}
		return fmt.Errorf("replica: shard %d: asked to remove its leader, which could not hand leadership over: %w", g.shard, err)
	}
	return ErrNotLeader
}
