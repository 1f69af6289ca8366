package kvs

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/batchkv/batchkv/auth"
	"github.com/batchkv/batchkv/kvs/memlimit"
	"github.com/batchkv/batchkv/kvs/replica"
	"github.com/batchkv/batchkv/kvs/replica/logcache"
	"github.com/batchkv/batchkv/kvs/replica/raftstore"
	"github.com/batchkv/batchkv/kvs/replica/transport"
	"github.com/batchkv/batchkv/kvs/store"
)

// The defaults of Config's fields that have one besides their zero
// value; Limits' are DefaultLimits'.
const (
	// DefaultHandshakeTimeout is Config.HandshakeTimeout's default.
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultFrameTimeout is Config.FrameTimeout's default.
	DefaultFrameTimeout = 30 * time.Second
)

// Config configures a Server. Zero fields take the defaults given.
type Config struct {
	// Peers are the host:port addresses of every server of the cluster,
	// this one included, as clients reach them. Empty means this server is
	// alone and owns every key.
	Peers []string
	// Self is this server's entry in Peers. Required when Peers is set.
	Self string
	// VirtualNodes per server on the ring; clients must use the same.
	// Zero means ring.DefaultVirtualNodes.
	VirtualNodes int
	// Store holds the data of a memory-only server. Nil means a new store
	// of kind store.DefaultKind. A replicated server keeps one store per
	// shard and only takes Store's kind from it: a *store.SyncMap makes
	// SyncMaps, anything else Arenas.
	Store store.Store
	// HandshakeTimeout bounds how long a new connection may take to
	// complete its TLS handshake and send the bytes that name its
	// protocol. Zero means DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// FrameTimeout bounds how long the rest of a binary frame may take to
	// arrive once its first byte has; a connection that stalls mid-frame
	// is closed. Zero means DefaultFrameTimeout.
	FrameTimeout time.Duration
	// Logger receives connection errors. Nil means slog.Default().
	Logger *slog.Logger

	// RF is the replication factor (the -rf flag). With RF > 1, or with a
	// DataDir, the server is replicated: keys map to Shards shards, each a
	// Raft group on RF servers (package shard places them), and
	// every write is on a majority's disk before it is acknowledged.
	// Zero or one without a DataDir (or InMemory) is the memory-only
	// server of the fixed ring.
	RF int
	// Shards is the number of shards of a replicated cluster; zero means
	// one per server. Every server and client must use the same.
	Shards int
	// Join is the address of a member of a running replicated cluster
	// that this server joins: it takes the cluster's shards, replication
	// factor and map from it (Peers, Shards and RF are then
	// ignored), hosts no shard until a move places one here (kvsctl
	// add-server), and restarts from the map it saved in DataDir.
	Join string
	// DataDir holds the Raft logs and snapshots, one folder per shard.
	// Required when replicated, unless InMemory.
	DataDir string
	// InMemory makes a memory-only server whose shards can move: each
	// shard is a one-replica Raft group (RF must be 1) whose log,
	// snapshots and map stay in memory, in place of the fixed ring. It
	// needs no DataDir, and keeps nothing across a restart: started again
	// (with Peers or Join) in a running cluster, it takes the cluster's
	// map and serves the replicas that map places on it again, empty,
	// except those whose group lives on at another member (a move was
	// under way), which it rejoins.
	InMemory bool
	// NoSync skips fsync of the Raft log: an acknowledged write may be lost
	// if a majority of a shard's machines lose power. For experiments only.
	NoSync bool
	// RaftLog is how each shard keeps its Raft log in DataDir; "" means
	// raftstore.LogWAL.
	RaftLog raftstore.LogFormat
	// RaftLogBytes bounds the bytes of the Raft logs in DataDir (package
	// logbound): 0, by entry counts only; logbound.Auto, a quarter of its
	// file system.
	RaftLogBytes int64
	// Raft sets the Raft timeouts and failover delays; zero means
	// replica.DefaultTiming().
	Raft replica.Timing
	// ReadMode is how a replicated server serves a batch of reads: ""
	// or ReadBarrier commits a barrier entry first, which needs no clock
	// assumption; ReadLease serves it from a leader's store within the
	// leader's lease, with no log entry (see replica.Config.LeaseReads).
	ReadMode string
	// plantLease, set only by tests (export_test.go), plants a bug for the
	// checkers: a read lease this long, not checked for safety.
	plantLease time.Duration
	// reapEveryMax, set only by tests (export_test.go), is the longest
	// the reaper waits between looks while the server is within its
	// reply budget (0: a second).
	reapEveryMax time.Duration
	// SessionTTL is how long a shard remembers a client session after its
	// last batch, to suppress retried duplicates. Default 10 minutes.
	SessionTTL time.Duration
	// DialRaft opens connections to peers for Raft; nil means plain TCP.
	// Tests route it through fault-injecting proxies. With an Identity,
	// TLS runs over what it opens.
	DialRaft transport.DialFunc

	// Identity, when set, makes every connection TLS 1.3 with certificates
	// verified both ways: the server's own for listening and for dialing
	// peers, and a certificate of the same CA required of every peer.
	// Only node certificates may speak Raft, and only for the shards whose
	// replicas' hosts they name. Nil means plaintext: anyone who reaches
	// the port may do anything, Raft included.
	Identity *auth.Identity
	// Limits bound what any one peer can make the server hold; zero fields
	// take DefaultLimits' (or, with MaxMemory, shares of it).
	Limits Limits
	// MaxMemory bounds the server's memory, in bytes, split as
	// memlimit.Shares says: a write past the stores' share is refused with
	// wire.StatusNoMemory (reads and deletes go on), and the heap's share
	// bounds Limits.ReplyBudget and Limits.RequestBudget (each at most a
	// quarter of it, Limits.ConnReplyBudget an eighth of that). Only the
	// Arenas the server makes itself count: leave Store nil (a SyncMap is
	// not counted, nor is a store given in Store). Zero means no bound.
	MaxMemory int64
	// GoMemoryLimit, with MaxMemory, has the server keep the Go runtime's
	// memory limit (GOMEMLIMIT) and GOGC as memlimit.Keep does. Both are
	// the process's: set it for one server per process (kvsserver does,
	// unless GOMEMLIMIT is set in its environment).
	GoMemoryLimit bool
	// account counts the server's stores for MaxMemory, and storeLimit
	// replaces their share of it when not 0 (SetStoreLimitForTest).
	account    *store.Account
	storeLimit int64
	// logCache bounds the replicas' Raft log caches together (a share of
	// MaxMemory).
	logCache *logcache.Budget
}

// The read modes of a replicated server (Config.ReadMode).
const (
	ReadBarrier = "barrier"
	ReadLease   = "lease"
)

// Replicated reports whether cfg makes a replicated server.
func (c *Config) Replicated() bool {
	return c.RF > 1 || c.DataDir != "" || c.Join != "" || c.InMemory
}

// validate fills cfg's zero fields with their defaults and checks it.
func (c *Config) validate() error {
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.FrameTimeout == 0 {
		c.FrameTimeout = DefaultFrameTimeout
	}
	c.account = new(store.Account)
	c.logCache = logcache.NewBudget(memlimit.LogCacheShare(c.MaxMemory))
	if c.Store == nil {
		c.Store = store.NewArenaIn(c.account)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.HandshakeTimeout < 0 || c.FrameTimeout < 0 {
		return errNegativeTimeout
	}
	switch {
	case c.MaxMemory < 0:
		return fmt.Errorf("kvs: MaxMemory of %d bytes", c.MaxMemory)
	case c.MaxMemory > 0 && c.MaxMemory < memlimit.Min:
		return fmt.Errorf("kvs: MaxMemory of %d bytes: at least %d MiB", c.MaxMemory, memlimit.Min>>20)
	case c.MaxMemory > 0:
		_, heap := memlimit.Shares(c.MaxMemory)
		if c.Limits.ReplyBudget == 0 {
			c.Limits.ReplyBudget = min(DefaultLimits().ReplyBudget, heap/4)
		}
		if c.Limits.ConnReplyBudget == 0 {
			c.Limits.ConnReplyBudget = min(DefaultLimits().ConnReplyBudget, c.Limits.ReplyBudget/8)
		}
		if c.Limits.RequestBudget == 0 {
			c.Limits.RequestBudget = min(c.defaultRequestBudget(), heap/4)
		}
	}
	if c.Limits.RequestBudget == 0 {
		c.Limits.RequestBudget = c.defaultRequestBudget()
	}
	if c.Limits.ConnRequestBudget == 0 && c.Replicated() {
		c.Limits.ConnRequestBudget = c.Limits.RequestBudget
	}
	var err error
	if c.Limits, err = c.Limits.WithDefaults(); err != nil {
		return err
	}
	if c.Identity != nil && c.Identity.Role != auth.RoleNode {
		return fmt.Errorf("kvs: a server needs a node certificate, not one with role %q", c.Identity.Role)
	}
	if len(c.Peers) > 0 && !slices.Contains(c.Peers, c.Self) {
		return fmt.Errorf("%w: %q not in %v", errNotInPeers, c.Self, c.Peers)
	}
	if c.Replicated() {
		switch {
		case c.InMemory && c.DataDir != "":
			return errors.New("kvs: InMemory and a DataDir: give one")
		case c.InMemory && c.RF > 1:
			return fmt.Errorf("kvs: InMemory with %d replicas: replicas that forget their Raft log and vote on restart can lose acknowledged writes; give a DataDir", c.RF)
		case c.DataDir == "" && !c.InMemory:
			return errors.New("kvs: a replicated server needs a DataDir")
		case c.Self == "":
			return errors.New("kvs: a replicated server needs Self, its address as peers and clients reach it")
		}
		if c.Raft == (replica.Timing{}) {
			c.Raft = replica.DefaultTiming()
		}
		switch c.ReadMode {
		case "", ReadBarrier, ReadLease:
		default:
			return fmt.Errorf("kvs: read mode %q: want %q or %q", c.ReadMode, ReadBarrier, ReadLease)
		}
	} else if c.ReadMode == ReadLease {
		return errors.New("kvs: read mode lease needs a replicated server (-rf above 1, or a data dir)")
	}
	return nil
}

// defaultRequestBudget is Limits.RequestBudget's default without a
// MaxMemory: larger for a replicated server, whose requests also wait for
// their commit.
func (c *Config) defaultRequestBudget() int64 {
	if c.Replicated() {
		return ReplicatedRequestBudget
	}
	return DefaultLimits().RequestBudget
}
