package backend

import (
	"errors"
	"fmt"

	"github.com/batchkv/batchkv/kvs/replica"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// Membership makes one step of a shard move on this server (see
// wire.MembershipOp and package membership, which drives the steps). An
// op that must run at a leader answers NotLeader, with the leader it
// knows, elsewhere.
func (b *Replicated) Membership(req *wire.MembershipRequest, reply *wire.MembershipReply) error {
	set := b.set
	m := set.Map()
	if req.Shard < 0 || req.Shard > m.Shards {
		return fmt.Errorf("kvs: shard %d: this cluster has shards 0 to %d and the meta group %d", req.Shard, m.Shards-1, m.Shards)
	}
	var err error
	switch req.Op {
	case wire.Members:
	case wire.OpenReplica:
		err = set.OpenReplica(req.Shard, req.Peers)
	case wire.AddLearner, wire.Promote, wire.TransferLeader, wire.RemoveMember:
		g := set.GroupOf(req.Shard)
		if g == nil {
			return fmt.Errorf("kvs: no replica of shard %d here", req.Shard)
		}
		err = g.ChangeMembers(req.Op, req.Addr)
	case wire.CloseReplica:
		// The caller's map may be newer than ours (we were down when it
		// changed): it is the one that took the replica away. It is a
		// hint: the map adopted is the meta group's.
		if req.Map.Epoch > 0 {
			var hint *shard.Map
			if hint, err = shard.FromWire(req.Map); err != nil {
				return err
			}
			b.refreshMap(hint)
		}
		err = set.CloseReplica(req.Shard)
	case wire.CommitMap:
		var next *shard.Map
		if next, err = shard.FromWire(req.Map); err != nil {
			return err
		}
		var cur *shard.Map
		cur, err = set.CommitMap(req.Expect, next)
		if cur != nil {
			reply.Map = cur.Wire()
		}
	case wire.ReadMap:
		var cur *shard.Map
		if cur, err = set.ReadMap(); err == nil {
			reply.Map = cur.Wire()
		}
	case wire.PublishMap:
		// A published map says that the map changed, not what it is: the
		// server adopts what the meta group holds, so that no caller can
		// hand it a map the group never committed.
		var hint *shard.Map
		if hint, err = shard.FromWire(req.Map); err != nil {
			return err
		}
		b.refreshMap(hint)
	default:
		return fmt.Errorf("kvs: unknown membership op %d", req.Op)
	}
	switch {
	case errors.Is(err, replica.ErrNotLeader):
		reply.NotLeader, err = true, nil
	case errors.Is(err, replica.ErrEpoch):
		reply.Stale, err = true, nil
	}
	if g := set.GroupOf(req.Shard); g != nil {
		reply.Members = g.Members()
		st := g.Status(false)
		reply.Applied, reply.Commit, reply.Leader, reply.State = st.Applied, st.Commit, st.Leader, st.State
	}
	if req.Op != wire.CommitMap && req.Op != wire.ReadMap {
		reply.Map = set.Map().Wire()
	}
	return err
}
