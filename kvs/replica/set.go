package replica

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batchkv/batchkv/internal/bugswitch"
	"github.com/batchkv/batchkv/kvs/replica/diskspace"
	"github.com/batchkv/batchkv/kvs/replica/durablefs"
	"github.com/batchkv/batchkv/kvs/replica/mapfile"
	"github.com/batchkv/batchkv/kvs/replica/selfcheck"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// Set is the replicas of the shards one server hosts, one Raft group
// each, and the shard map this server knows. Its methods are safe for
// concurrent use.
type Set struct {
	cfg    Config
	layout *shard.Layout
	// initial is the epoch-1 map from the flags, which the meta group
	// holds until its first commit (or a reborn server's map, which the
	// meta group it bootstraps holds); nil on a server that joined later.
	initial *shard.Map
	m       atomic.Pointer[shard.Map]
	// groups holds this server's replicas by shard, with the meta group
	// last (index wire.MetaShard); nil where it hosts none. Replaced
	// whole, under mu, when a replica opens or closes.
	groups atomic.Pointer[[]*Group]
	mu     sync.Mutex // opens, closes, map adoption
	metaMu sync.Mutex // serializes CommitMap
	closed bool       // guarded by mu
	// disk watches the data dir's space and the peers' (package diskspace);
	// nil without a data dir.
	disk *diskspace.Watch
}

// Open opens (creating or recovering from DataDir) a replica of every
// shard that the map places on cfg.Self, and of the meta group if it is
// one of its replicas, and starts their Raft nodes. The map is the one
// saved in DataDir if it is newer than cfg.Map (or, with cfg.Map nil, the
// initial map of cfg.Layout). Only the initial map's replicas bootstrap
// their groups; later ones wait for their leader.
func Open(cfg Config) (*Set, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Set{cfg: cfg, layout: cfg.Layout}
	m := cfg.Map
	if m == nil {
		m = shard.Initial(cfg.Layout, cfg.VirtualNodes)
	}
	if m.Epoch == 1 || cfg.Reborn {
		s.initial = m
	}
	if saved, err := mapfile.Load(cfg.DataDir); err != nil {
		return nil, err
	} else if saved != nil && saved.Epoch > m.Epoch {
		m = saved
	}
	if err := s.compatible(m); err != nil {
		return nil, err
	}
	if !slices.Contains(m.Servers, cfg.Self) && cfg.Map == nil {
		return nil, fmt.Errorf("replica: %q is not among the members %v", cfg.Self, m.Servers)
	}
	if err := mapfile.Save(cfg.DataDir, m); err != nil {
		return nil, err
	}
	s.m.Store(m)
	if cfg.DataDir != "" {
		d, err := diskspace.Start(diskspace.Config{Dir: cfg.DataDir, Reserve: diskReserve, Logger: cfg.Logger,
			PeerStatus: diskspace.PeerStatusFunc(cfg.PeerStatus), Peers: s.peers})
		if err != nil {
			return nil, err
		}
		s.disk = d
	}
	groups := make([]*Group, m.Shards+1)
	s.groups.Store(&groups)
	s.mu.Lock()
	defer s.mu.Unlock()
	// Only the initial map's groups bootstrap, and a reborn server's
	// that have no other replica, here or elsewhere.
	join := func(sh int, reps []string) bool {
		if cfg.Reborn {
			return len(reps) != 1 || cfg.HostedElsewhere[sh]
		}
		return m.Epoch > 1
	}
	for _, sh := range m.Hosted(cfg.Self) {
		if err := s.openLocked(sh, m.Placement[sh], join(sh, m.Placement[sh])); err != nil {
			s.closeLocked()
			return nil, err
		}
	}
	if slices.Contains(m.Meta, cfg.Self) {
		metaJoins := join(m.Shards, m.Meta)
		if err := s.openLocked(m.Shards, m.Meta, metaJoins); err != nil {
			s.closeLocked()
			return nil, err
		}
		if cfg.Reborn && !metaJoins {
			go s.seedMeta(m)
		}
	}
	// A replica a move was adding when the server stopped is not in the
	// map yet: its data is reopened, so that the move can finish (a move
	// that gave up closes it, and so does the next Reconcile).
	for _, sh := range s.onDisk() {
		if s.GroupOf(sh) == nil {
			if err := s.openLocked(sh, m.Replicas(sh), true); err != nil {
				s.closeLocked()
				return nil, err
			}
		}
	}
	s.checkAgainstPeers()
	return s, nil
}

// checkAgainstPeers runs the start-up check (package selfcheck) of every
// data shard replica this server opened, in the background; a replica
// that differs from its peers is rebuilt.
func (s *Set) checkAgainstPeers() {
	if s.cfg.PeerStatus == nil || bugswitch.NoStartupCheck.Load() {
		return
	}
	cfg := selfcheck.Config{Self: s.cfg.Self, PeerStatus: selfcheck.SharedDigests(s.cfg.PeerStatus, time.Second), Logger: s.cfg.Logger}
	for sh := range s.layout.Shards() {
		if g := s.Group(sh); g != nil && !g.Rebuilding() && len(g.Placement()) >= 3 {
			r := selfcheck.Replica{Shard: sh, Dir: g.dir, Placement: g.Placement, Applied: g.raft.AppliedIndex,
				Content: func() (uint64, uint64, int, bool) {
					c, ok := g.fsm.SettledContent()
					return c.Index, c.Digest, c.Keys, ok
				}, Stop: g.stop}
			go func() {
				if verdict := selfcheck.Run(cfg, r); verdict != nil {
					s.damaged(sh, g, verdict)
				}
			}()
		}
	}
}

// onDisk returns the data shards whose replica data is in the data dir
// (the meta group's, in "meta", opens only when the map places it here).
func (s *Set) onDisk() []int {
	if s.cfg.DataDir == "" {
		return nil
	}
	if err := durablefs.RemoveTrash(s.cfg.DataDir); err != nil {
		s.cfg.Logger.Warn("a replica's directory left by a cut mid-delete is still there", "err", err)
	}
	entries, err := os.ReadDir(s.cfg.DataDir)
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		var sh int
		if _, err := fmt.Sscanf(e.Name(), "shard-%d", &sh); err == nil && e.IsDir() &&
			e.Name() == fmt.Sprintf("shard-%d", sh) && sh >= 0 && sh < s.layout.Shards() {
			out = append(out, sh)
		}
	}
	return out
}

// compatible checks that m places the same shards, keyed the same way,
// as this server routes.
func (s *Set) compatible(m *shard.Map) error {
	if err := m.Validate(); err != nil {
		return err
	}
	if m.Shards != s.layout.Shards() {
		return fmt.Errorf("replica: map of %d shards; this server routes keys to %d", m.Shards, s.layout.Shards())
	}
	return nil
}

// openLocked starts this server's replica of shard sh (or of the meta
// group, sh == Shards) with replicas as its placement.
func (s *Set) openLocked(sh int, replicas []string, join bool) error {
	dir := fmt.Sprintf("shard-%d", sh)
	if sh == s.layout.Shards() {
		dir = "meta"
	}
	c := s.cfg
	if c.DataDir == "" {
		dir = "" // in memory
	} else {
		dir = filepath.Join(c.DataDir, dir)
	}
	var opened atomic.Pointer[Group]
	g, err := s.openOrRebuild(groupConfig{
		shard: sh, self: c.Self, replicas: replicas, join: join, dir: dir,
		noSync: c.NoSync, logFormat: c.LogFormat, timing: c.Timing, dial: c.Dial, peerStat: c.PeerStatus, disk: s.disk,
		newStore: c.NewStore, sessionTT: c.SessionTTL, leases: c.LeaseReads, log: c.Logger, logCache: c.LogCache, logBytes: c.LogBytes,
		raftRefused: c.RaftRefused, damaged: func(err error) { go s.damaged(sh, opened.Load(), err) },
	})
	if err != nil {
		return err
	}
	opened.Store(g)
	groups := slices.Clone(*s.groups.Load())
	groups[sh] = g
	s.groups.Store(&groups)
	return nil
}

// Layout returns the key-to-shard layout the set was opened with.
func (s *Set) Layout() *shard.Layout { return s.layout }

// Self returns this server's address.
func (s *Set) Self() string { return s.cfg.Self }

// Map returns the shard map this server knows.
func (s *Set) Map() *shard.Map { return s.m.Load() }

// Group returns this server's replica of data shard sh, or nil if it
// hosts none.
func (s *Set) Group(sh int) *Group {
	groups := *s.groups.Load()
	if sh < 0 || sh >= len(groups)-1 {
		return nil
	}
	return groups[sh]
}

// Meta returns this server's replica of the meta group, or nil.
func (s *Set) Meta() *Group {
	groups := *s.groups.Load()
	return groups[len(groups)-1]
}

// GroupOf returns this server's replica of data shard sh or, for sh ==
// Shards (the meta group's number in membership requests), of the meta
// group; nil if it hosts none.
func (s *Set) GroupOf(sh int) *Group {
	groups := *s.groups.Load()
	if sh < 0 || sh >= len(groups) {
		return nil
	}
	return groups[sh]
}

// Replicas returns who may speak Raft for shard sh (or the meta group):
// its replicas under this server's map, under the map its replica here
// was opened or last updated with, and in that replica's Raft
// configuration. Nil for no such shard.
func (s *Set) Replicas(sh int) []string {
	reps := s.Map().Replicas(sh)
	if reps == nil {
		return nil
	}
	out := slices.Clone(reps)
	if g := s.GroupOf(sh); g != nil {
		out = append(out, g.Placement()...)
		for _, mb := range g.Members() {
			out = append(out, mb.Addr)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Accept hands an inbound Raft connection for shard sh, whose
// transport.Preamble and shard number have been read, to that shard's
// transport. On error the caller still owns c.
func (s *Set) Accept(c net.Conn, sh int) error {
	g := s.GroupOf(sh)
	if g == nil {
		return fmt.Errorf("%w: shard %d", ErrNoSuchShard, sh)
	}
	if !g.stream.Offer(g.node.WatchConn(c)) {
		return net.ErrClosed
	}
	return nil
}

// Status reports every hosted shard, with content digests when
// withDigest (a full scan of each shard).
func (s *Set) Status(withDigest bool) []wire.ShardStatus {
	var out []wire.ShardStatus
	groups := *s.groups.Load()
	for _, g := range groups[:len(groups)-1] {
		if g != nil {
			out = append(out, g.Status(withDigest))
		}
	}
	return out
}

// Close shuts every replica down and waits for it.
func (s *Set) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closeLocked()
}

func (s *Set) closeLocked() error {
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for _, g := range *s.groups.Load() {
		if g != nil {
			g.halt() // no group starts a snapshot while the others close
		}
	}
	for _, g := range *s.groups.Load() {
		if g != nil {
			errs = append(errs, g.close())
		}
	}
	s.disk.Close()
	return errors.Join(errs...)
}
