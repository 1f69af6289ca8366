package diskspace

// Peers' stores near their limit. A leader refuses a put that would take
// its own server's stores past their share of memory
// (backend.StoreLimit), but a follower applies what its leader commits.
// So the Watch's poll of its peers also notes what each said of its
// stores: a leader takes no puts for a shard while one of the shard's
// replicas said in its last answer that its stores are within a
// sixteenth of their limit (PeersStoresNear). A peer that misses a poll
// keeps what it said last, as for its disk.

// notePeerStores records whether peer said its stores are near their
// limit.
func (d *Watch) notePeerStores(peer string, near bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if near != d.peerStores[peer] {
		d.log.Info("peer's stores", "peer", peer, "near_limit", near)
	}
	d.peerStores[peer] = near
	some := false
	for _, n := range d.peerStores {
		some = some || n
	}
	d.somePeerStoresNear.Store(some)
}

// PeersStoresNear reports whether one of replicas (this server among
// them or not) said in its last answer that its stores are near their
// limit.
func (d *Watch) PeersStoresNear(replicas []string) bool {
	if d == nil || !d.somePeerStoresNear.Load() {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range replicas {
		if d.peerStores[r] {
			return true
		}
	}
	return false
}
