package replica

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"time"

	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// DefaultSessionTTL is how long a shard remembers a client session after
// its last batch. A batch retried later than this after its first attempt
// may apply twice.
const DefaultSessionTTL = 10 * time.Minute

// Config configures the replicas a server hosts.
type Config struct {
	// Layout places every shard's replicas on the servers.
	Layout *shard.Layout
	// Self is this server's address, as peers and clients reach it, and
	// its Raft server ID. It must be one of Layout's servers.
	Self string
	// DataDir holds the Raft logs and snapshots, one folder per shard.
	DataDir string
	// NoSync skips fsync of the Raft log: an acknowledged write may be lost
	// if a majority of a shard's machines lose power. For experiments only.
	NoSync bool
	// Timing sets the Raft timeouts and the failover delays.
	Timing Timing
	// SessionTTL is how long a shard remembers a client session; zero
	// means DefaultSessionTTL.
	SessionTTL time.Duration
	// NewStore makes an empty store for a shard, and for each snapshot
	// restore. Nil means store.NewArena.
	NewStore func() store.Store
	// Dial opens connections to peers for Raft; nil means DialTCP.
	Dial DialFunc
	// PeerStatus asks a peer for its status, for the silence check; nil
	// turns the silence check off.
	PeerStatus StatusFunc
	// LeaseReads lets a leader serve reads without a log entry for
	// Timing.LeaseRead after an entry of its term commits (lease.go). It
	// assumes the servers' clocks run at rates within 50% of each other,
	// and turns off the immediate election after a leader's crash: a
	// crashed leader is replaced after about 700 ms instead of 200 ms.
	LeaseReads bool
	// LeaseUnchecked skips the check that Timing.LeaseRead is safe. Only
	// tests set it, to plant a lease too long and show that the
	// linearizability checker catches its stale reads.
	LeaseUnchecked bool
	// Logger receives Raft's warnings and the failover decisions. Nil means
	// slog.Default().
	Logger *slog.Logger
}

// Set is the replicas of the shards one server hosts, one Raft group
// each. Its methods are safe for concurrent use.
type Set struct {
	layout *shard.Layout
	groups []*Group // by shard; nil where this server hosts no replica
}

// Open opens (creating or recovering from DataDir) a replica of every
// shard that cfg.Layout places on cfg.Self, and starts its Raft node.
func Open(cfg Config) (*Set, error) {
	servers := cfg.Layout.Servers()
	me := slices.Index(servers, cfg.Self)
	if me < 0 {
		return nil, fmt.Errorf("replica: %q is not among the servers %v", cfg.Self, servers)
	}
	if cfg.NewStore == nil {
		cfg.NewStore = func() store.Store { return store.NewArena() }
	}
	if cfg.Dial == nil {
		cfg.Dial = DialTCP
	}
	if cfg.SessionTTL == 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.LeaseReads && !cfg.LeaseUnchecked {
		if err := checkLease(cfg.Timing); err != nil {
			return nil, err
		}
		if cfg.PeerStatus == nil {
			return nil, errors.New("replica: lease reads need PeerStatus: a crashed leader is replaced by the silence check")
		}
	}
	s := &Set{layout: cfg.Layout, groups: make([]*Group, cfg.Layout.Shards())}
	for _, sh := range cfg.Layout.Hosted(me) {
		var reps []string
		for _, i := range cfg.Layout.Replicas(sh) {
			reps = append(reps, servers[i])
		}
		g, err := openGroup(groupConfig{
			shard: sh, self: cfg.Self, replicas: reps, dir: filepath.Join(cfg.DataDir, fmt.Sprintf("shard-%d", sh)),
			noSync: cfg.NoSync, timing: cfg.Timing, dial: cfg.Dial, peerStat: cfg.PeerStatus,
			newStore: cfg.NewStore, sessionTT: cfg.SessionTTL, leases: cfg.LeaseReads, log: cfg.Logger,
		})
		if err != nil {
			_ = s.Close()
			return nil, err
		}
		s.groups[sh] = g
	}
	return s, nil
}

// Layout returns the shard layout the set was opened with.
func (s *Set) Layout() *shard.Layout { return s.layout }

// Group returns this server's replica of shard sh, or nil if it hosts
// none.
func (s *Set) Group(sh int) *Group {
	if sh < 0 || sh >= len(s.groups) {
		return nil
	}
	return s.groups[sh]
}

// Replicas returns the addresses of shard sh's replicas, or nil for no
// such shard.
func (s *Set) Replicas(sh int) []string {
	if sh < 0 || sh >= s.layout.Shards() {
		return nil
	}
	servers := s.layout.Servers()
	var out []string
	for _, i := range s.layout.Replicas(sh) {
		out = append(out, servers[i])
	}
	return out
}

// Accept hands an inbound Raft connection for shard sh, whose Preamble
// and shard number have been read, to that shard's transport. On error
// the caller still owns c.
func (s *Set) Accept(c net.Conn, sh int) error {
	g := s.Group(sh)
	if g == nil {
		return fmt.Errorf("%w: shard %d", ErrNoSuchShard, sh)
	}
	if !g.stream.Offer(&watchedConn{Conn: c, ended: g.suspectLeader}) {
		return net.ErrClosed
	}
	return nil
}

// Status reports every hosted shard, with content digests when
// withDigest (a full scan of each shard).
func (s *Set) Status(withDigest bool) []wire.ShardStatus {
	var out []wire.ShardStatus
	for _, g := range s.groups {
		if g != nil {
			out = append(out, g.Status(withDigest))
		}
	}
	return out
}

// Close shuts every replica down and waits for it. It is not safe to call
// twice.
func (s *Set) Close() error {
	var errs []error
	for _, g := range s.groups {
		if g != nil {
			errs = append(errs, g.close())
		}
	}
	return errors.Join(errs...)
}
