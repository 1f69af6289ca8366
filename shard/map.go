package shard

import (
	"errors"
	"fmt"
	"slices"

	"github.com/batchkv/batchkv/wire"
)

// Map is a versioned placement of a replicated cluster's shards: which
// servers are members, which of them replicate each shard (its preferred
// leader first), and which replicate the meta group that stores the map
// itself. Key to shard stays the hash of the Layout it was made from
// (Shards and VirtualNodes never change), so only placement moves. Every
// change makes a new Map with a higher Epoch; a Map is never modified
// once shared.
type Map struct {
	Epoch        uint64 // the map's version; every change raises it
	Shards       int    // shards keys map to; fixed for the cluster's life
	RF           int    // replicas of each shard, and of the meta group
	VirtualNodes int    // the ring's virtual nodes per shard (0: the default)
	// Servers are the members, in the order they joined.
	Servers []string
	// Placement[s] are shard s's replicas, its preferred leader first.
	Placement [][]string
	// Meta are the replicas of the meta group, which stores the map.
	Meta []string
}

// Initial is the map a cluster starts with: epoch 1, the placement of
// Layout l, and the meta group on the first RF servers.
func Initial(l *Layout, vnodes int) *Map {
	m := &Map{Epoch: 1, Shards: l.Shards(), RF: l.RF(), VirtualNodes: vnodes,
		Servers: slices.Clone(l.Servers()), Placement: make([][]string, l.Shards())}
	for s := range m.Placement {
		for _, i := range l.Replicas(s) {
			m.Placement[s] = append(m.Placement[s], l.Servers()[i])
		}
	}
	m.Meta = slices.Clone(m.Servers[:l.RF()])
	return m
}

// Validate checks that m is a map a server may adopt: every shard has RF
// distinct replicas, all members, and so has the meta group.
func (m *Map) Validate() error {
	switch {
	case m.Epoch == 0:
		return errors.New("shard: map epoch 0")
	case m.RF < 1:
		return fmt.Errorf("shard: map RF %d", m.RF)
	case m.Shards < 1 || m.Shards > 1<<16 || len(m.Placement) != m.Shards:
		return fmt.Errorf("shard: map of %d shards places %d", m.Shards, len(m.Placement))
	}
	seen := map[string]bool{}
	for _, s := range m.Servers {
		if seen[s] || s == "" {
			return fmt.Errorf("shard: member %q listed twice or empty", s)
		}
		seen[s] = true
	}
	check := func(what string, reps []string) error {
		if len(reps) != m.RF {
			return fmt.Errorf("shard: %s has %d replicas, want %d", what, len(reps), m.RF)
		}
		for i, r := range reps {
			if !seen[r] || slices.Index(reps, r) != i {
				return fmt.Errorf("shard: %s replica %q is not a member, or listed twice", what, r)
			}
		}
		return nil
	}
	for s, reps := range m.Placement {
		if err := check(fmt.Sprintf("shard %d", s), reps); err != nil {
			return err
		}
	}
	return check("the meta group", m.Meta)
}

// Clone returns a deep copy of m, to change into the next epoch's map.
func (m *Map) Clone() *Map {
	c := *m
	c.Servers = slices.Clone(m.Servers)
	c.Meta = slices.Clone(m.Meta)
	c.Placement = make([][]string, len(m.Placement))
	for s := range m.Placement {
		c.Placement[s] = slices.Clone(m.Placement[s])
	}
	return &c
}

// Hosted returns the shards whose replicas include addr, in order.
func (m *Map) Hosted(addr string) []int {
	var out []int
	for s, reps := range m.Placement {
		if slices.Contains(reps, addr) {
			out = append(out, s)
		}
	}
	return out
}

// Replicas returns shard s's replicas, or for s == Shards (the meta
// group's number in membership requests) the meta group's, or nil for no
// such group; the caller must not modify them.
func (m *Map) Replicas(s int) []string {
	switch {
	case s == m.Shards:
		return m.Meta
	case s < 0 || s > m.Shards:
		return nil
	}
	return m.Placement[s]
}

// WithReplicas returns a copy of m with group s's replicas (a shard's, or
// for s == Shards the meta group's) set to reps.
func (m *Map) WithReplicas(s int, reps []string) *Map {
	next := m.Clone()
	if s == m.Shards {
		next.Meta = slices.Clone(reps)
	} else {
		next.Placement[s] = slices.Clone(reps)
	}
	return next
}

// Wire returns m as the admin RPCs carry it.
func (m *Map) Wire() wire.ClusterMap {
	c := m.Clone()
	return wire.ClusterMap{Servers: c.Servers, VirtualNodes: c.VirtualNodes, Replicas: c.RF, Shards: c.Shards,
		Epoch: c.Epoch, Placement: c.Placement, Meta: c.Meta}
}

// FromWire returns the map that l carries, validated.
func FromWire(l wire.ClusterMap) (*Map, error) {
	m := (&Map{Epoch: l.Epoch, Shards: l.Shards, RF: l.Replicas, VirtualNodes: l.VirtualNodes,
		Servers: l.Servers, Placement: l.Placement, Meta: l.Meta}).Clone()
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}
