package selfcheck

import (
	"fmt"
	"time"

	"github.com/batchkv/batchkv/kvs/replica/raftstore"
	"github.com/batchkv/batchkv/wire"
)

const (
	// checkFor bounds how long a server tries to compare a replica.
	checkFor = 30 * time.Second
	// checkEvery is the pause between tries: a server without TLS gives
	// a caller one digest a second.
	checkEvery = 1100 * time.Millisecond
)

// Run compares replica r with its peers until it could, checkFor passes,
// or r.Stop closes. It returns a *raftstore.CorruptError when r differs
// from peers that agree with each other, nil otherwise.
func Run(cfg Config, r Replica) error {
	var last uint64
	for deadline := time.Now().Add(checkFor); time.Now().Before(deadline); {
		select {
		case <-r.Stop:
			return nil
		case <-time.After(checkEvery):
		}
		// Only a shard at rest is compared: under writes its replicas
		// never stand at one index, and a digest is a full scan of every
		// shard of the server asked.
		applied := r.Applied()
		if applied != last {
			last = applied
			continue
		}
		verdict, compared := compareOnce(cfg, r)
		if compared {
			return verdict
		}
	}
	return nil
}

// compareOnce asks r's peers for their digests and compares r's with
// theirs at the same applied index. compared is false when it could not
// (a peer did not answer, or the indexes differ); verdict is non-nil when
// r differs from peers that agree.
func compareOnce(cfg Config, r Replica) (verdict error, compared bool) {
	// First without digests (a full scan of the shard): only when every
	// replica rests at one index are they worth asking for.
	for _, addr := range r.Placement() {
		if addr == cfg.Self {
			continue
		}
		st, err := cfg.PeerStatus(addr, wire.StatusRequest{}, 5*time.Second)
		if err != nil {
			return nil, false
		}
		for _, ss := range st.Shards {
			if ss.Shard == r.Shard && ss.Applied != r.Applied() {
				return nil, false
			}
		}
	}
	var peers []wire.ShardStatus
	var addrs []string
	for _, addr := range r.Placement() {
		if addr == cfg.Self {
			continue
		}
		st, err := cfg.PeerStatus(addr, wire.StatusRequest{Digest: true}, 5*time.Second)
		if err != nil {
			return nil, false
		}
		for _, ss := range st.Shards {
			if ss.Shard == r.Shard {
				peers, addrs = append(peers, ss), append(addrs, addr)
			}
		}
	}
	if len(peers) < 2 {
		return nil, false
	}
	// Raft counts an entry applied before the store has it, so the
	// stores are compared where each says it stands (StoreIndex), not
	// where Raft does.
	before := r.Applied()
	index, digest, keys, ok := r.Content()
	if !ok || r.Applied() != before {
		return nil, false
	}
	for _, p := range peers {
		if p.Applied != before || p.ContentMoving || p.StoreIndex != index {
			return nil, false
		}
	}
	for _, p := range peers[1:] {
		if p.Digest != peers[0].Digest || p.Keys != peers[0].Keys {
			cfg.Logger.Error("start-up check: this replica's peers differ from each other; nothing done",
				"shard", r.Shard, "index", index, "peers", addrs)
			return nil, true
		}
	}
	if digest == peers[0].Digest && keys == peers[0].Keys {
		cfg.Logger.Info("start-up check: the replica agrees with its peers", "shard", r.Shard, "index", index)
		return nil, true
	}
	return &raftstore.CorruptError{File: r.Dir, Detail: fmt.Sprintf(
		"start-up check: at index %d this replica's digest is %016x (%d keys), its peers' %016x (%d keys)",
		index, digest, keys, peers[0].Digest, peers[0].Keys)}, true
}
