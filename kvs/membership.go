package kvs

import (
	"errors"
	"fmt"
	"time"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/kvs/replica"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// Membership makes one step of a shard move on this server (see
// wire.MembershipOp and package membership, which drives the steps). An
// op that must run at a leader answers NotLeader, with the leader it
// knows, elsewhere. With TLS, only callers with a certificate of the
// cluster's CA get here, as for every RPC, and only admin and node
// certificates with an op that changes something (serverCodec).
func (s *Service) Membership(req *wire.MembershipRequest, reply *wire.MembershipReply) error {
	s.callOf(req)
	rb, ok := s.backend.(*replicatedBackend)
	if !ok {
		return errors.New("kvs: membership changes need servers started with -rf above 1, a data dir or -in-memory; this one serves a fixed ring")
	}
	return rb.membership(req, reply)
}

func (b *replicatedBackend) membership(req *wire.MembershipRequest, reply *wire.MembershipReply) error {
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
		// changed): it is the one that took the replica away.
		if req.Map.Epoch > 0 {
			var next *shard.Map
			if next, err = shard.FromWire(req.Map); err != nil {
				return err
			}
			if err = set.Adopt(next); err != nil {
				return err
			}
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
		var next *shard.Map
		if next, err = shard.FromWire(req.Map); err != nil {
			return err
		}
		err = set.Adopt(next)
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

// mapPollEvery is how often a replicated server asks one of the meta
// group's replicas for the current map, in case a change was not
// published to it (its publisher stopped, or it was down).
const mapPollEvery = time.Second

// followMap adopts newer maps from the meta group's replicas until stop
// closes: each second it asks the next of them for its map.
func (b *replicatedBackend) followMap(admin client.Admin, stop <-chan struct{}) {
	tick := time.NewTicker(mapPollEvery)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		meta := b.set.Map().Meta
		addr := meta[n%len(meta)]
		if addr == b.set.Self() {
			// A meta replica adopts what it commits as leader; as a
			// follower it learns new maps from publishes and the others.
			continue
		}
		l, err := admin.Layout(addr, mapPollEvery)
		if err != nil || l.Epoch <= b.set.Map().Epoch {
			continue
		}
		m, err := shard.FromWire(l)
		if err == nil {
			err = b.set.Adopt(m)
		}
		if err != nil {
			b.log.Warn("adopting the shard map", "from", addr, "epoch", l.Epoch, "err", err)
		} else {
			b.log.Info("adopted the shard map", "from", addr, "epoch", l.Epoch)
		}
	}
}
