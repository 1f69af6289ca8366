package kvs

import (
	"errors"
	"fmt"
	"slices"
	"time"

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

// mapPollEvery is how often a replicated server asks one of the meta
// group's replicas for the current map, in case a change was not
// published to it (its publisher stopped, or it was down).
const mapPollEvery = time.Second

// followMap adopts newer maps from the meta group until stop closes:
// each second it reads its own meta replica's, if it has one, and asks
// the next of the other meta replicas for theirs (its own may have been
// taken out of the group, and stopped advancing).
func (b *replicatedBackend) followMap(stop <-chan struct{}) {
	tick := time.NewTicker(mapPollEvery)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		b.adoptStored()
		var others []string
		for _, a := range b.set.Map().Meta {
			if a != b.set.Self() {
				others = append(others, a)
			}
		}
		if len(others) > 0 {
			b.adoptFrom(others[n%len(others)])
		}
	}
}

// refreshAsk bounds asking one meta replica for its map on a publish.
const refreshAsk = 500 * time.Millisecond

// refreshMap adopts the newest map of the meta group, told that the map
// changed. hint, a map a caller sent, is not adopted: only its epoch (how
// new a map to look for) and its meta replicas that are members under
// this server's map (where to look besides this map's meta replicas)
// are used. It reads its own meta replica's map, then asks the others
// until it has one as new as hint.
func (b *replicatedBackend) refreshMap(hint *shard.Map) {
	cur := b.set.Map()
	if hint.Epoch <= cur.Epoch {
		return
	}
	if b.adoptStored(); b.set.Map().Epoch >= hint.Epoch {
		return
	}
	asked := map[string]bool{b.set.Self(): true}
	for _, addr := range append(slices.Clone(cur.Meta), hint.Meta...) {
		if asked[addr] || !slices.Contains(cur.Servers, addr) {
			continue
		}
		asked[addr] = true
		if b.adoptFrom(addr) && b.set.Map().Epoch >= hint.Epoch {
			return
		}
	}
}

// adoptStored adopts the map this server's meta replica holds, if it has
// one and it is newer.
func (b *replicatedBackend) adoptStored() {
	m, err := b.set.StoredMap()
	if err == nil && m != nil && m.Epoch > b.set.Map().Epoch {
		err = b.set.Adopt(m)
		b.logAdopted("own meta replica", m.Epoch, err)
	}
}

// adoptFrom asks the server at addr, a replica of the meta group, for its
// map and adopts it if newer; it reports whether it adopted one.
func (b *replicatedBackend) adoptFrom(addr string) bool {
	if addr == b.set.Self() {
		return false
	}
	l, err := b.admin.Layout(addr, refreshAsk)
	if err != nil || l.Epoch <= b.set.Map().Epoch {
		return false
	}
	m, err := shard.FromWire(l)
	if err == nil {
		err = b.set.Adopt(m)
	}
	b.logAdopted(addr, l.Epoch, err)
	return err == nil
}

func (b *replicatedBackend) logAdopted(from string, epoch uint64, err error) {
	if err != nil {
		b.log.Warn("adopting the shard map", "from", from, "epoch", epoch, "err", err)
	} else {
		b.log.Info("adopted the shard map", "from", from, "epoch", epoch)
	}
}
