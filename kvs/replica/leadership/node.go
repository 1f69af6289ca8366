package leadership

import (
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/kvs/replica/diskspace"
	"github.com/batchkv/batchkv/kvs/replica/failover"
	"github.com/batchkv/batchkv/wire"
)

// Node runs the watchers of one shard's replica: it speeds up failover
// (deadleader.go, silentleader.go), hands leadership back to the shard's
// preferred replica (handbackwatch.go) and away from a full disk
// (fulldisk.go), makes a new shard's preferred replica its first leader
// (firstelection.go), and guards the votes (voteguard.go). Its methods
// are safe for concurrent use.
type Node struct {
	shard     int
	self      string
	raft      *raft.Raft // set by Start
	transport *Guard
	logs      raft.StableStore
	placement func() []string
	heardFrom func(addr string) (time.Time, bool)
	dial      func(addr string, timeout time.Duration) (net.Conn, error)
	peerStat  func(addr string, req wire.StatusRequest, timeout time.Duration) (wire.StatusReply, error)
	heartbeat time.Duration
	timing    failover.Timing
	lease     *Lease
	disk      *diskspace.Watch
	log       *slog.Logger

	suspect chan struct{} // an inbound Raft connection ended
	// standing is the term this replica is about to stand in (stands), and
	// asked the latest election a peer asked it to vote in
	// (notesVoteRequest).
	standing, asked recentTerm

	observed chan raft.Observation
	observer *raft.Observer
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// New returns the node of a replica whose Raft node is not made yet: it
// already tells cfg.Guard whether the replica may stand for election.
func New(cfg Config) (*Node, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	n := &Node{shard: cfg.Shard, self: cfg.Self, transport: cfg.Guard, logs: cfg.Votes, placement: cfg.Placement,
		heardFrom: cfg.HeardFrom, dial: cfg.Dial, peerStat: cfg.PeerStatus, heartbeat: cfg.Heartbeat,
		timing: cfg.Timing, lease: cfg.Lease, disk: cfg.Disk, log: cfg.Logger,
		suspect: make(chan struct{}, 1), observed: make(chan raft.Observation, 64), stop: make(chan struct{})}
	cfg.Guard.mayStand = n.mayStand
	cfg.Guard.abstain = cfg.Rebuilding
	cfg.Guard.refuseHaste = n.refuseHaste
	return n, nil
}

// Start passes the RPCs the peers send on to r, the replica's Raft node,
// through the guard.
func (n *Node) Start(r *raft.Raft) {
	n.raft = r
	n.transport.start(n.stands, n.notesVoteRequest, n.refusePreVote)
}

// Watch starts the watchers, once the Raft node has its configuration;
// leadFirst makes this replica call the shard's first election.
func (n *Node) Watch(leadFirst bool) {
	n.observer = raft.NewObserver(n.observed, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.FailedHeartbeatObservation, raft.ResumedHeartbeatObservation:
			return true
		}
		return false
	})
	n.raft.RegisterObserver(n.observer)
	if leadFirst {
		n.wg.Add(1)
		go n.leadFirst()
	}
	n.wg.Add(4)
	go n.watchDisk()
	go n.watchHandBack()
	go n.watchLeaderDeath()
	go n.watchSilence()
}

// Stop tells the watchers to stop; Wait waits for them.
func (n *Node) Stop() {
	n.stopOnce.Do(func() { close(n.stop) })
	if n.observer != nil {
		n.raft.DeregisterObserver(n.observer)
	}
}

// Wait waits for the watchers Stop stopped.
func (n *Node) Wait() { n.wg.Wait() }

// WatchConn returns c, an inbound Raft connection of the shard, made to
// tell the crash check when it ends.
func (n *Node) WatchConn(c net.Conn) net.Conn {
	return &watchedConn{Conn: c, ended: n.suspectLeader}
}

// watchedConn is an inbound Raft connection that reports when it ends.
type watchedConn struct {
	net.Conn
	once  sync.Once
	ended func()
}

// Read implements net.Conn, and reports the end.
func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.once.Do(c.ended)
	}
	return n, err
}

// suspectLeader asks watchLeaderDeath to check the leader.
func (n *Node) suspectLeader() {
	select {
	case n.suspect <- struct{}{}:
	default:
	}
}
