package diskspace

import (
	"slices"
	"time"

	"github.com/batchkv/batchkv/wire"
)

// Peers' stores near their limit. A leader refuses a put that would take
// its own server's stores past their share of memory
// (backend.StoreLimit), but a follower applies what its leader commits.
// So the Watch's poll of its peers also notes what each said of its
// stores: a leader takes no puts for a shard while another of the
// shard's replicas said that its stores are within a sixteenth of their
// limit (wire.StoreStats.NearLimit), until it says they are under seven
// eighths of it (WellWithinLimit), so that a replica's compactions do not
// turn the leaders' refusals on and off at each poll. A peer that misses
// a poll keeps what it said last for StoresHeardFor, no longer: a server
// that has stopped does not grow, and must not stop its shards' puts.

// StoresHeardFor is how long what a peer said of its stores holds
// without a newer answer.
const StoresHeardFor = 2 * time.Second

// peerStores is what a peer said of its stores in its last answer.
type peerStores struct {
	near bool
	at   time.Time // when it said so
}

// notePeerStores records what peer said of its stores at now.
func (d *Watch) notePeerStores(peer string, st *wire.StoreStats, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	was := d.peerStores[peer].near
	near := st.NearLimit() || was && !st.WellWithinLimit()
	switch {
	case near && !was:
		d.log.Warn("peer's stores near their share of memory: its shards' leaders here take no puts", "peer", peer,
			"stores_bytes", st.Bytes, "limit_bytes", st.Limit)
	case was && !near:
		d.log.Info("peer's stores well within their share of memory again", "peer", peer)
	}
	d.peerStores[peer] = peerStores{near: near, at: now}
	d.notePeersNear()
}

// forgetPeerStores drops what the servers no longer among peers said.
func (d *Watch) forgetPeerStores(peers []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for p := range d.peerStores {
		if !slices.Contains(peers, p) {
			delete(d.peerStores, p)
		}
	}
	d.notePeersNear()
}

// notePeersNear sets somePeerStoresNear from peerStores; d.mu is held.
func (d *Watch) notePeersNear() {
	some := false
	for _, p := range d.peerStores {
		some = some || p.near
	}
	d.somePeerStoresNear.Store(some)
}

// PeersStoresNear reports whether one of replicas (this server among
// them or not) said in an answer of the last StoresHeardFor that its
// stores are near their limit.
func (d *Watch) PeersStoresNear(replicas []string) bool {
	if d == nil || !d.somePeerStoresNear.Load() {
		return false
	}
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range replicas {
		if p := d.peerStores[r]; p.near && now.Sub(p.at) < StoresHeardFor {
			return true
		}
	}
	return false
}
