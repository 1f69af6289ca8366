package replica

import (
	"slices"

	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/wire"
)

// refuseWrite returns why this replica, as leader, must not append a
// write now: ErrNoSpace when a majority of the shard's disks are full,
// ErrHandingOver when its own is (package leadership hands it over).
func (g *Group) refuseWrite() error {
	if !g.disk.AnyFull() || g.raft.State() != raft.Leader {
		return nil
	}
	if g.node.NoSpace() {
		return ErrNoSpace
	}
	if g.disk.IsFull() {
		return ErrHandingOver
	}
	return nil
}

// Leads reports whether this replica is its shard's Raft leader now.
func (g *Group) Leads() bool { return g.raft.State() == raft.Leader }

// PeersStoresNear reports whether another replica of this shard said in
// a recent poll that its stores are near their limit (diskspace).
func (g *Group) PeersStoresNear() bool { return g.disk.PeersStoresNear(g.Placement()) }

// peers returns the other servers of the cluster under this server's map.
func (s *Set) peers() []string {
	return slices.DeleteFunc(slices.Clone(s.Map().Servers), func(a string) bool { return a == s.cfg.Self })
}

// Disk returns the data dir's space; nil for replicas in memory.
func (s *Set) Disk() *wire.DiskStats { return s.disk.Stats() }
