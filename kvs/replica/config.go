package replica

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/batchkv/batchkv/kvs/replica/commitgate"
	"github.com/batchkv/batchkv/kvs/replica/failover"
	"github.com/batchkv/batchkv/kvs/replica/fsm"
	"github.com/batchkv/batchkv/kvs/replica/leadership"
	"github.com/batchkv/batchkv/kvs/replica/logbound"
	"github.com/batchkv/batchkv/kvs/replica/logcache"
	"github.com/batchkv/batchkv/kvs/replica/raftstore"
	"github.com/batchkv/batchkv/kvs/replica/transport"
	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// Config configures the replicas a server hosts.
type Config struct {
	// Layout maps keys to shards, and gives the initial placement when
	// Map is nil.
	Layout *shard.Layout
	// Map is the placement a joining server starts from (it asked a
	// member for it); nil on the initial servers.
	Map *shard.Map
	// Reborn says this server keeps its replicas in memory (no DataDir),
	// has restarted with nothing, and Map is the cluster's current map: it
	// bootstraps new, empty groups for the shards whose only replica Map
	// places here (and for the meta group, holding Map, if Map names only
	// this server), so that they serve again, without the data they had;
	// but not for those in HostedElsewhere (shard numbers, the meta group
	// as Map.Shards), whose groups live on elsewhere (a move onto another
	// server was under way): it rejoins those.
	Reborn          bool
	HostedElsewhere map[int]bool
	// VirtualNodes is the ring's virtual nodes per shard, recorded in the
	// map.
	VirtualNodes int
	// Self is this server's address, as peers and clients reach it, and
	// its Raft server ID. It must be a member under the map.
	Self string
	// DataDir holds the Raft logs and snapshots, one folder per shard,
	// and the last map. Empty keeps all of them in memory: nothing
	// survives a restart, so only one-replica groups may (a replica that
	// forgot its vote could vote twice in a term).
	DataDir string
	// NoSync skips fsync of the Raft log: an acknowledged write may be lost
	// if a majority of a shard's machines lose power. For experiments only.
	NoSync bool
	// LogFormat is how each shard keeps its Raft log in DataDir; "" means
	// LogWAL. A shard whose dir holds a log in another format does not
	// open.
	LogFormat raftstore.LogFormat
	// Timing sets the Raft timeouts and the failover delays.
	Timing Timing
	// SessionTTL is how long a shard remembers a client session; zero
	// means fsm.DefaultSessionTTL.
	SessionTTL time.Duration
	// NewStore makes an empty store for a shard, and for each snapshot
	// restore. Nil means store.NewArena.
	NewStore func() store.Store
	// Dial opens connections to peers for Raft; nil means
	// transport.DialTCP.
	Dial transport.DialFunc
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
	// Fatal is called when a replica finds its data damaged while it runs
	// and the shard has no other replica to rebuild it from: the replica
	// is closed, and the server should stop. Nil only logs it. (Damage
	// found when a replica opens is Open's error.)
	Fatal func(error)
	// Logger receives Raft's warnings and the failover decisions. Nil means
	// slog.Default().
	Logger *slog.Logger
	// LogCache bounds the bytes the groups' log caches hold together (a
	// share of the server's -max-memory). Nil: only their entry counts.
	LogCache *logcache.Budget
	// LogBytes bounds the bytes the groups' Raft logs keep on disk
	// together (package logbound); nil: only the entry counts of Timing.
	LogBytes *logbound.Budget
	// RaftRefused is called for each Raft message a peer sent that broke
	// transport.DefaultLimits (Raft then closes its connection); nil:
	// only Raft's log line.
	RaftRefused func(error)
}

// validate fills cfg's defaults and rejects what cannot work (the
// checks that need the map are Open's).
func (cfg *Config) validate() error {
	if cfg.NewStore == nil {
		cfg.NewStore = func() store.Store { return store.NewArena() }
	}
	if cfg.Dial == nil {
		cfg.Dial = transport.DialTCP
	}
	if cfg.SessionTTL == 0 {
		cfg.SessionTTL = fsm.DefaultSessionTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.LeaseReads && !cfg.LeaseUnchecked {
		if err := checkLease(cfg.Timing); err != nil {
			return err
		}
		if cfg.PeerStatus == nil {
			return errors.New("replica: lease reads need PeerStatus: a crashed leader is replaced by the silence check")
		}
	}
	if cfg.DataDir == "" && cfg.Layout.RF() > 1 {
		return fmt.Errorf("replica: %d replicas per shard need a data dir: a replica that forgets its log and vote on restart can vote twice in a term", cfg.Layout.RF())
	}
	if share := cfg.Timing.SnapshotShare; !(share >= 0 && share <= 1) {
		return fmt.Errorf("replica: snapshot share %v: want a share of the time in (0, 1], or 0 for the default", share)
	}
	if cfg.Reborn && (cfg.DataDir != "" || cfg.Map == nil) {
		return errors.New("replica: only a server without a data dir is reborn, and from the cluster's map")
	}
	return nil
}

// Timing holds the Raft timeouts, log bounds and failover delays of every
// shard.
type Timing struct {
	// HeartbeatTimeout is how long a follower waits without hearing from
	// the leader before it calls a (pre-)election; the leader sends
	// heartbeats every tenth of it. ElectionTimeout bounds a candidate's
	// election round; LeaderLeaseTimeout is how long a leader keeps
	// leading without hearing from a majority.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	// SnapshotThreshold is the number of log entries after which a shard
	// snapshots and truncates its log to the last TrailingLogs entries.
	// A follower further behind than TrailingLogs is sent the whole
	// snapshot. Default 8192 and 10240 (hashicorp/raft's own): with 1024,
	// a follower down for 5 s under the chaos bulk load (250 entries a
	// second) was sent a snapshot of a million keys in place of 1,100
	// entries, which cost the cluster a third of its throughput for 6 s.
	SnapshotThreshold uint64
	TrailingLogs      uint64
	// SnapshotInterval is how often a shard checks SnapshotThreshold.
	SnapshotInterval time.Duration
	// SnapshotShare is the share of the time a snapshot being written may
	// spend writing (fsm.DefaultSnapshotShare; 1: unpaced).
	SnapshotShare float64
	// LeaseRead is how long after an entry of its term commits a leader
	// serves reads without a log entry, when lease reads are on (see
	// lease.go). Default 400 ms.
	LeaseRead time.Duration
	// CommitWindow is how long a leader under heavy load holds an entry,
	// to send it with the entries that arrive after it (package commitgate);
	// 0 sends every entry at once. Default 40 ms.
	CommitWindow time.Duration
	// Failover holds the delays of fast failover; zero fields take
	// failover.DefaultTiming's.
	Failover failover.Timing
}

// DefaultTiming returns the timing the servers run with; docs/replication.md
// explains the choice. With 250 ms of added one-way latency
// on the leader's links, a heartbeat round trip takes 500 ms plus the
// 80-160 ms heartbeat interval, under the 800 ms a follower waits. A
// killed leader is replaced at once (failover.go), a silent one once a
// majority has not heard from it for 800 ms (silence.go).
func DefaultTiming() Timing {
	return Timing{
		HeartbeatTimeout:   800 * time.Millisecond,
		ElectionTimeout:    800 * time.Millisecond,
		LeaderLeaseTimeout: 800 * time.Millisecond,
		SnapshotThreshold:  8192,
		TrailingLogs:       10240,
		SnapshotInterval:   10 * time.Second,
		SnapshotShare:      fsm.DefaultSnapshotShare,
		LeaseRead:          400 * time.Millisecond,
		CommitWindow:       commitgate.DefaultWindow,
		Failover:           failover.DefaultTiming(),
	}
}

// ApplyTimeout bounds the wait to hand an entry (a write batch, a read
// barrier) to Raft.
const ApplyTimeout = 5 * time.Second

// Fixed parameters of every shard's Raft node.
const (
	// logCacheEntries is how many recent log entries stay in memory, so
	// that replicating them to followers does not read the log store. A
	// write entry holds a whole batch's writes for the shard, and every
	// replica caches what it stores, so the cache is a large part of a
	// server's live heap (about 117 MB of a follower's 437 MB at RF=3
	// under the standard load). 128 entries halved the page faults of a
	// run's first seconds where huge pages are off, but a new leader
	// behind a burst of retried batches then read its followers' entries
	// from the log store, and the first write after a crash took up to 4 s
	// (docs/results.md, "Heap growth and page faults").
	logCacheEntries = 1024
	// barrierTimeout bounds a new leader's wait for its first barrier,
	// after which it serves reads.
	barrierTimeout = 10 * time.Second
)

// diskReserve is the free space under which a server is full
// (diskspace.Config.Reserve): four WAL segments. With the standard load
// writing about 5 MB/s per shard, the half of it that stays writable
// lasts the shards of a server several seconds, far longer than its
// peers take to learn it is full.
const diskReserve = 4 * raftstore.WALSegmentSize

// checkLease returns an error if t's lease is too long to be safe
// (leadership.CheckLease).
func checkLease(t Timing) error {
	return leadership.CheckLease(t.LeaseRead, t.HeartbeatTimeout-t.Failover.WithDefaults().SilenceSlack)
}

// StatusFunc asks the server at addr for its status within timeout; the
// server wires it to the client's Status RPC.
type StatusFunc func(addr string, req wire.StatusRequest, timeout time.Duration) (wire.StatusReply, error)
