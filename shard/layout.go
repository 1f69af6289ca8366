// Package shard places the shards of a replicated cluster on its servers.
//
// Keys map to shards by consistent hashing (package ring, over the shard
// names), and, in a cluster's initial layout, shard i is replicated on RF
// consecutive servers starting at server i mod N. That first replica is
// the shard's preferred leader, so with S >= N shards each server prefers
// to lead about S/N of them. Servers and clients compute the same layout
// from the same flags; its ID lets a server refuse a batch routed with a
// different key-to-shard mapping. A Map is the placement as it changes
// while the cluster runs, versioned by an epoch.
package shard

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cespare/xxhash/v2"

	"github.com/batchkv/batchkv/ring"
)

// Layout is an immutable placement of shards on servers.
type Layout struct {
	servers []string
	shards  int
	rf      int
	ring    *ring.Ring
	id      uint64
}

// New returns the layout of shards shards, each on rf of servers. Zero
// shards means one per server, so that every server leads one; fewer
// shards than servers leave some servers leading none (the fault
// experiments use one shard, as a single Raft group). It fails unless
// 1 <= rf <= len(servers) and shards >= 1.
func New(servers []string, shards, rf, vnodes int) (*Layout, error) {
	n := len(servers)
	if shards == 0 {
		shards = n
	}
	switch {
	case n == 0:
		return nil, errors.New("shard: no servers")
	case rf < 1 || rf > n:
		return nil, fmt.Errorf("shard: replication factor %d needs 1 to %d servers; have %d", rf, n, n)
	case shards < 1:
		return nil, fmt.Errorf("shard: %d shards; want at least one", shards)
	case shards > 1<<16:
		return nil, fmt.Errorf("shard: %d shards, limit %d", shards, 1<<16)
	}
	names := make([]string, shards)
	for i := range names {
		names[i] = fmt.Sprintf("shard-%d", i)
	}
	r, err := ring.New(names, vnodes)
	if err != nil {
		return nil, fmt.Errorf("shard: %w", err)
	}
	// The ID covers key to shard only: the servers and the replication
	// of shards change while the cluster runs (package membership),
	// which the shard map's epoch tracks.
	id := xxhash.Sum64(binary.LittleEndian.AppendUint64(nil, r.ID()))
	if id == 0 {
		id = 1 // zero means "unrouted" on the wire
	}
	return &Layout{servers: append([]string(nil), servers...), shards: shards, rf: rf, ring: r, id: id}, nil
}

// Shard returns the shard that owns key.
func (l *Layout) Shard(key string) int { return l.ring.Owner(key) }

// Shards returns the number of shards.
func (l *Layout) Shards() int { return l.shards }

// RF returns the replication factor.
func (l *Layout) RF() int { return l.rf }

// Servers returns the servers' addresses; the caller must not modify them.
func (l *Layout) Servers() []string { return l.servers }

// ID fingerprints how keys map to shards: the number of shards and the
// ring's virtual nodes. Servers and clients that agree on it route every
// key to the same shard.
func (l *Layout) ID() uint64 { return l.id }

// Replicas returns the indexes (into Servers) of shard's replicas, its
// preferred leader first.
func (l *Layout) Replicas(shard int) []int {
	out := make([]int, l.rf)
	for j := range out {
		out[j] = (shard + j) % len(l.servers)
	}
	return out
}

// Preferred returns the index of shard's preferred leader.
func (l *Layout) Preferred(shard int) int { return shard % len(l.servers) }

// Hosted returns the shards that server (an index into Servers) replicates,
// in increasing order.
func (l *Layout) Hosted(server int) []int {
	var out []int
	for s := 0; s < l.shards; s++ {
		for _, r := range l.Replicas(s) {
			if r == server {
				out = append(out, s)
				break
			}
		}
	}
	return out
}
