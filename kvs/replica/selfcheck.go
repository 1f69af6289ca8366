package replica

import (
	"fmt"
	"time"

	"github.com/batchkv/batchkv/internal/bugswitch"
	"github.com/batchkv/batchkv/kvs/replica/raftstore"
	"github.com/batchkv/batchkv/wire"
)

// The start-up check (etcd's initial corruption check): once its
// replicas have opened, a server compares each of them with its peers,
// at the same applied index, by content digest. A replica whose digest
// differs from two peers that agree with each other holds damaged data
// that no checksum caught (or a bug put there): it is handled as damage
// found while running, and rebuilt. A replica that cannot be compared
// (its shard's replicas never rest at the same index meanwhile, as under
// steady writes) is left as it is.
const (
	// selfCheckFor bounds how long a server tries to compare a replica.
	selfCheckFor = 30 * time.Second
	// selfCheckEvery is the pause between tries: a server without TLS
	// gives a caller one digest a second.
	selfCheckEvery = 1100 * time.Millisecond
)

// checkAgainstPeers runs the start-up check of every data shard replica
// this server opened, in the background.
func (s *Set) checkAgainstPeers() {
	if s.cfg.PeerStatus == nil || bugswitch.NoStartupCheck.Load() {
		return
	}
	for sh := range s.layout.Shards() {
		if g := s.Group(sh); g != nil && !g.Rebuilding() && len(g.Placement()) >= 3 {
			go s.checkReplica(sh, g)
		}
	}
}

// checkReplica compares replica g of shard sh with its peers until it
// could, or selfCheckFor passes.
func (s *Set) checkReplica(sh int, g *Group) {
	var last uint64
	for deadline := time.Now().Add(selfCheckFor); time.Now().Before(deadline); {
		select {
		case <-g.stop:
			return
		case <-time.After(selfCheckEvery):
		}
		// Only a shard at rest is compared: under writes its replicas
		// never stand at one index, and a digest is a full scan of every
		// shard of the server asked.
		applied := g.raft.AppliedIndex()
		if applied != last {
			last = applied
			continue
		}
		verdict, compared := s.compareOnce(g)
		if !compared {
			continue
		}
		if verdict != nil {
			s.damaged(sh, g, verdict)
		}
		return
	}
}

// compareOnce asks g's peers for their digests and compares g's with
// theirs at the same applied index. compared is false when it could not
// (a peer did not answer, or the indexes differ); verdict is non-nil when
// g differs from peers that agree.
func (s *Set) compareOnce(g *Group) (verdict error, compared bool) {
	// First without digests (a full scan of the shard): only when every
	// replica rests at one index are they worth asking for.
	for _, addr := range g.Placement() {
		if addr == s.cfg.Self {
			continue
		}
		st, err := s.cfg.PeerStatus(addr, wire.StatusRequest{}, 5*time.Second)
		if err != nil {
			return nil, false
		}
		for _, ss := range st.Shards {
			if ss.Shard == g.shard && ss.Applied != g.raft.AppliedIndex() {
				return nil, false
			}
		}
	}
	var peers []wire.ShardStatus
	var addrs []string
	for _, addr := range g.Placement() {
		if addr == s.cfg.Self {
			continue
		}
		st, err := s.cfg.PeerStatus(addr, wire.StatusRequest{Digest: true}, 5*time.Second)
		if err != nil {
			return nil, false
		}
		for _, ss := range st.Shards {
			if ss.Shard == g.shard {
				peers, addrs = append(peers, ss), append(addrs, addr)
			}
		}
	}
	if len(peers) < 2 {
		return nil, false
	}
	before := g.raft.AppliedIndex()
	digest, keys := g.fsm.Digest(), g.fsm.Store().Len()
	if g.raft.AppliedIndex() != before {
		return nil, false
	}
	for _, p := range peers {
		if p.Applied != before {
			return nil, false
		}
	}
	for _, p := range peers[1:] {
		if p.Digest != peers[0].Digest || p.Keys != peers[0].Keys {
			s.cfg.Logger.Error("start-up check: this replica's peers differ from each other; nothing done",
				"shard", g.shard, "index", before, "peers", addrs)
			return nil, true
		}
	}
	if digest == peers[0].Digest && keys == peers[0].Keys {
		s.cfg.Logger.Info("start-up check: the replica agrees with its peers", "shard", g.shard, "index", before)
		return nil, true
	}
	return &raftstore.CorruptError{File: g.dir, Detail: fmt.Sprintf(
		"start-up check: at index %d this replica's digest is %016x (%d keys), its peers' %016x (%d keys)",
		before, digest, keys, peers[0].Digest, peers[0].Keys)}, true
}
