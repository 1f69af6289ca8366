package leadership

import (
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/kvs/replica/diskspace"
	"github.com/batchkv/batchkv/kvs/replica/failover"
	"github.com/batchkv/batchkv/wire"
)

// Config is what a shard's Node watches and acts through. Every field but
// PeerStatus, Disk, Lease and Logger is required.
type Config struct {
	// Shard is the replica's shard, as the peers' Status RPC names it.
	Shard int
	// Self is this replica's address and Raft server ID.
	Self string
	// Guard is the Raft transport of the replica's node, made with
	// NewGuard and handed to raft.NewRaft.
	Guard *Guard
	// Votes is the replica's stable store, where Raft records its term
	// and vote.
	Votes raft.StableStore
	// Placement returns the shard's replicas, preferred leader first.
	Placement func() []string
	// HeardFrom returns when a peer last sent bytes on a Raft connection
	// this replica opened to it.
	HeardFrom func(addr string) (at time.Time, ok bool)
	// Dial opens a connection to a peer's port, for the crash probe.
	Dial func(addr string, timeout time.Duration) (net.Conn, error)
	// PeerStatus asks a peer for its status; nil turns the silence check
	// off (and the crash check's look at the peers' logs).
	PeerStatus func(addr string, req wire.StatusRequest, timeout time.Duration) (wire.StatusReply, error)
	// Heartbeat is Raft's heartbeat timeout.
	Heartbeat time.Duration
	// Timing holds the failover delays; zero fields take
	// failover.DefaultTiming's.
	Timing failover.Timing
	// Lease is the leader's read lease, given up around a hand-over; nil
	// means lease reads are off.
	Lease *Lease
	// Disk watches this server's data dir and its peers'; nil: never
	// full.
	Disk *diskspace.Watch
	// Rebuilding reports whether the replica is being rebuilt from its
	// peers: it then refuses every vote, pre-vote and TimeoutNow.
	Rebuilding func() bool
	// Logger receives the watchers' decisions. Nil means slog.Default().
	Logger *slog.Logger
}

// Errors of New's configuration, and what the guard answers.
var (
	// errConfig says a required field of Config is missing.
	errConfig = errors.New("leadership: Config needs Guard, Votes, Placement, HeardFrom, Dial, Rebuilding and a Heartbeat")
	// errFullNoStand answers a TimeoutNow sent to a replica that may not
	// stand, and fails its own vote requests.
	errFullNoStand = errors.New("replica: data dir full: this replica stands for no election")
	// errRebuilding answers a TimeoutNow sent to a replica being rebuilt.
	errRebuilding = errors.New("replica: being rebuilt from its peers")
)

// validate fills cfg's defaults and rejects a missing required field.
func (cfg *Config) validate() error {
	if cfg.Guard == nil || cfg.Votes == nil || cfg.Placement == nil || cfg.HeardFrom == nil || cfg.Dial == nil ||
		cfg.Rebuilding == nil || cfg.Heartbeat <= 0 {
		return errConfig
	}
	cfg.Timing = cfg.Timing.WithDefaults()
	if cfg.Lease == nil {
		cfg.Lease = NewLease(false, 0, 0)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return nil
}
