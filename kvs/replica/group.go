package replica

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/kvs/replica/commitgate"
	"github.com/batchkv/batchkv/kvs/replica/diskspace"
	"github.com/batchkv/batchkv/kvs/replica/fsm"
	"github.com/batchkv/batchkv/kvs/replica/leadership"
	"github.com/batchkv/batchkv/kvs/replica/logbound"
	"github.com/batchkv/batchkv/kvs/replica/logcache"
	"github.com/batchkv/batchkv/kvs/replica/raftstore"
	"github.com/batchkv/batchkv/kvs/replica/transport"
	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
)

// Group is this server's replica of one shard: a Raft node, its log and
// snapshot stores, and the shard's state machine. Its methods are safe for
// concurrent use.
type Group struct {
	shard int
	self  string
	dir   string // the replica's data: Raft log and snapshots ("": in memory)
	// place is the shard's replicas as the map has them, preferred leader
	// first; a move changes it (SetPlacement).
	place     atomic.Pointer[[]string]
	raft      *raft.Raft
	fsm       *fsm.Machine
	stream    *transport.Stream
	transport *leadership.Guard
	heartbeat time.Duration // the heartbeat timeout
	logs      raftstore.Store
	cache     *logcache.Cache // in front of logs, for Raft
	log       *slog.Logger
	// disk watches the space of this server's data dir and its peers'
	// (nil: replicas in memory).
	disk *diskspace.Watch

	// readyTerm is the term in which this replica, as leader, has applied
	// every entry committed before it: reads are served only in that term.
	readyTerm atomic.Uint64
	// rebuilding says the replica's data was damaged, and is being sent
	// again by its peers: it neither votes nor stands (rebuild.go).
	rebuilding atomic.Bool
	// lease lets a leader serve reads without a log entry.
	lease *leadership.Lease
	// gate groups the entries this replica appends as leader.
	gate *commitgate.Gate
	// node runs the watchers that speed up failover, hand leadership
	// back, and hand it over from a full disk, and guards the votes.
	node *leadership.Node

	notify chan bool
	stop   chan struct{}
	halted sync.Once // closes stop
	wg     sync.WaitGroup
}

// groupConfig is what opening a replica group needs.
type groupConfig struct {
	shard    int
	self     string
	replicas []string // addresses, preferred leader first
	// join opens a replica that an existing group will add: it never
	// bootstraps, and waits for the leader to send it the shard.
	join      bool
	dir       string
	noSync    bool
	logFormat raftstore.LogFormat
	timing    Timing
	dial      transport.DialFunc
	peerStat  StatusFunc
	newStore  func() store.Store
	sessionTT time.Duration
	leases    bool
	// damaged is called when the replica finds its data damaged while it
	// runs (a log entry or snapshot read for a follower); nil ignores it.
	damaged func(error)
	log     *slog.Logger
	// disk watches the server's data dir (nil with dir "").
	disk *diskspace.Watch
	// logCache is the budget of the server's log caches; nil: none.
	logCache *logcache.Budget
	// logBytes bounds the server's Raft logs in bytes; nil: none.
	logBytes *logbound.Budget
	// raftRefused is told of each Raft message refused; nil: none.
	raftRefused func(error)
}

func openGroup(gc groupConfig) (g *Group, err error) {
	g = &Group{shard: gc.shard, self: gc.self, dir: gc.dir,
		log: gc.log.With("shard", gc.shard), notify: make(chan bool, 16),
		stop: make(chan struct{}), heartbeat: gc.timing.HeartbeatTimeout, disk: gc.disk}
	g.SetPlacement(gc.replicas)
	g.lease = leadership.NewLease(gc.leases, gc.timing.LeaseRead, leadership.TransferQuarantine(gc.timing.ElectionTimeout, transport.RPCTimeout))
	g.gate = commitgate.New(commitgate.Config{Window: gc.timing.CommitWindow})
	g.fsm = fsm.New(fsm.Config{NewStore: gc.newStore, SessionTTL: gc.sessionTT, SnapshotShare: gc.timing.SnapshotShare})
	if gc.damaged == nil {
		gc.damaged = func(error) {}
	}
	rebuildTo, rebuilding := raftstore.RebuildTarget(gc.dir)
	if rebuilding {
		gc.join = true // it must never bootstrap a configuration of its own
		g.rebuilding.Store(true)
	}
	hlog := transport.NewRaftLogger(g.log)
	logs, snaps, err := raftstore.Open(raftstore.Config{Shard: gc.shard, Dir: gc.dir, Format: gc.logFormat,
		NoSync: gc.noSync, Disk: gc.disk, OnCorrupt: gc.damaged, Logger: gc.log, RaftLogger: hlog})
	var dmg *raftstore.DamagedError
	if errors.As(err, &dmg) {
		return nil, &damagedError{shard: gc.shard, err: dmg.Err, kept: dmg.Kept}
	}
	if err != nil {
		return nil, err
	}
	g.logs = logs
	if gc.logCache == nil {
		gc.logCache = logcache.NewBudget(0)
	}
	cached := logcache.New(g.logs, logCacheEntries, gc.logCache)
	g.cache = cached
	defer func() {
		if err != nil {
			cached.Drop()
			_ = g.closeLogs()
		}
	}()
	g.stream = transport.NewStream(gc.shard, gc.self, gc.dial)
	g.stream.OnRefused(gc.raftRefused)
	g.transport = leadership.NewGuard(transport.NewNetwork(g.stream, hlog))
	g.node, err = leadership.New(leadership.Config{Shard: gc.shard, Self: gc.self, Guard: g.transport, Votes: g.logs,
		Placement: g.Placement, HeardFrom: g.stream.HeardFrom, Dial: gc.dial, PeerStatus: gc.peerStat,
		Heartbeat: gc.timing.HeartbeatTimeout, Timing: gc.timing.Failover, Lease: g.lease, Disk: gc.disk,
		Rebuilding: g.rebuilding.Load, Logger: g.log})
	if err != nil {
		_ = g.transport.Close()
		_ = g.stream.Close()
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = g.transport.Close()
			_ = g.stream.Close()
		}
	}()
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(gc.self)
	rc.HeartbeatTimeout = gc.timing.HeartbeatTimeout
	rc.ElectionTimeout = gc.timing.ElectionTimeout
	rc.LeaderLeaseTimeout = gc.timing.LeaderLeaseTimeout
	rc.SnapshotThreshold = gc.timing.SnapshotThreshold
	rc.TrailingLogs = gc.timing.TrailingLogs
	rc.SnapshotInterval = gc.timing.SnapshotInterval
	rc.MaxAppendEntries = transport.MaxAppendEntries // the group commit of concurrent batches
	rc.BatchApplyCh = true
	rc.NotifyCh = g.notify
	rc.Logger = hlog
	existing, err := raft.HasExistingState(cached, g.logs, snaps)
	if err != nil {
		return nil, err
	}
	g.raft, err = raft.NewRaft(rc, g.fsm, cached, g.logs, snaps, g.transport)
	if err != nil {
		return nil, fmt.Errorf("replica: shard %d raft: %w", gc.shard, err)
	}
	g.node.Start(g.raft)
	if !existing && !gc.join {
		var conf raft.Configuration
		for _, r := range gc.replicas {
			conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(r), Address: raft.ServerAddress(r)})
		}
		if err := g.raft.BootstrapCluster(conf).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			_ = g.raft.Shutdown().Error()
			return nil, fmt.Errorf("replica: shard %d bootstrap: %w", gc.shard, err)
		}
	}
	g.node.Watch(!existing && !gc.join && g.self == gc.replicas[0] && len(gc.replicas) > 1)
	if gc.logBytes != nil {
		tuner := logbound.NewTuner(gc.logBytes, logbound.Defaults(rc), logbound.OfRaft(g.raft, cached.Stored, g.log))
		g.wg.Add(1)
		go func() { defer g.wg.Done(); tuner.Run(g.stop) }()
	}
	if rebuilding {
		g.wg.Add(1)
		go g.watchRebuild(rebuildTo)
	}
	g.wg.Add(1)
	go g.watchLeadership()
	return g, nil
}

// watchLeadership makes a new leader ready for reads: once a barrier in
// its term has applied every earlier entry, reads may be served.
func (g *Group) watchLeadership() {
	defer g.wg.Done()
	for {
		select {
		case <-g.stop:
			return
		case leader := <-g.notify:
			if !leader {
				continue
			}
			term := g.raft.CurrentTerm()
			if err := g.await(g.raft.Barrier(barrierTimeout)); err != nil {
				continue
			}
			if g.raft.CurrentTerm() == term && g.raft.State() == raft.Leader {
				g.readyTerm.Store(term)
			}
		}
	}
}

// LeaderHint returns the address of the shard's leader as this replica
// knows it, or "".
func (g *Group) LeaderHint() string {
	addr, _ := g.raft.LeaderWithID()
	return string(addr)
}

// AwaitNewLeader waits, up to timeout, until this replica knows a leader
// other than itself after a hand-over, and returns it ("" if none came).
// A request turned away during the hand-over can then go straight to the
// new leader instead of retrying here.
func (g *Group) AwaitNewLeader(timeout time.Duration) string {
	deadline := time.Now().Add(timeout)
	for {
		if l := g.LeaderHint(); l != "" && l != g.self {
			return l
		}
		if time.Now().After(deadline) {
			return g.LeaderHint()
		}
		select {
		case <-g.stop:
			return ""
		case <-time.After(handOverPoll):
		}
	}
}

// handOverPoll is how often AwaitNewLeader looks at the leader.
const handOverPoll = 2 * time.Millisecond

// ReadBarrier returns nil once a read that started before the call may be
// served from this replica's store: a barrier entry appended after the
// read began has been committed by this replica as leader and applied,
// with everything before it. That proves it still led after the read
// began (no other leader can have acknowledged a write this store lacks)
// and that every write acknowledged before the read is in the store.
// Concurrent reads' barriers are group-committed with the writes.
//
// A heartbeat round (raft's VerifyLeader) would be cheaper, but
// hashicorp/raft lets it be confirmed by replies to AppendEntries sent
// before the call, which can let a deposed leader serve a stale read; the
// fault test caught one.
func (g *Group) ReadBarrier() error {
	term := g.raft.CurrentTerm()
	if g.raft.State() != raft.Leader || g.readyTerm.Load() != term {
		return ErrNotLeader
	}
	start := g.lease.Now()
	if err := g.append(func() raft.Future { return g.raft.Barrier(ApplyTimeout) }); err != nil || g.raft.CurrentTerm() != term {
		if errors.Is(err, raft.ErrLeadershipTransferInProgress) {
			return ErrHandingOver
		}
		return ErrNotLeader
	}
	g.lease.Renew(start, term)
	return nil
}

// Written is what became of a batch that Write replicated.
type Written struct {
	// Duplicate says the entry repeated a batch of its session that was
	// applied before (a client's retry), and was not applied again.
	Duplicate bool
	// Results are the results of the entry's ops, in order, when it
	// carries gets or conditional puts: a get in an entry reads the store
	// as the entry's earlier ops left it, at the entry's place in the log,
	// and a conditional put is decided there. For a Duplicate, they are
	// what its conditional puts answered when first applied (its gets
	// answer StatusUnavail), or nil when the shard cannot tell (the
	// entry has no conditional puts, or its session was restored from a
	// snapshot that kept no outcomes). Nil otherwise.
	Results []wire.Result
}

// Write replicates one encoded batch (wire.AppendBatchArgs of its ops,
// session and sequence number) and waits until it is committed and
// applied. It returns ErrNotLeader when the entry was certainly not
// appended, ErrNoSpace when it was not because a majority of the shard's
// disks are full, and another error when its fate is unknown.
//
// Once Write returns nil, the entry was committed by this replica as
// leader, and applied here with everything before it: like ReadBarrier,
// it proves that a read begun before the call may now be served from
// this replica's store.
func (g *Group) Write(entry []byte, timeout time.Duration) (Written, error) {
	var start int64
	var term uint64
	if g.lease.On() {
		start, term = g.lease.Now(), g.raft.CurrentTerm()
	}
	if err := g.refuseWrite(); err != nil {
		return Written{}, err
	}
	var f raft.ApplyFuture
	if err := g.append(func() raft.Future { f = g.raft.Apply(entry, timeout); return f }); err != nil {
		switch {
		case errors.Is(err, raft.ErrLeadershipTransferInProgress):
			return Written{}, ErrHandingOver
		case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrEnqueueTimeout):
			return Written{}, ErrNotLeader
		}
		return Written{}, err
	}
	if plantedSecondTrip {
		// The planted bug: a second round trip to the quorum per write.
		if err := g.append(func() raft.Future { return g.raft.Barrier(timeout) }); err != nil {
			return Written{}, err
		}
	}
	res, _ := f.Response().(fsm.Result)
	// An entry of this term committed: the lease runs from before it was
	// appended. (A term that moved before the entry was appended is
	// caught by renew: the lease is granted for term, which then differs
	// from the current one.)
	if g.readyTerm.Load() == term {
		g.lease.Renew(start, term)
	}
	return Written{Duplicate: res.Duplicate, Results: res.Results}, res.Err
}

// append passes the commit gate, appends an entry with add, and waits
// for Raft's answer.
func (g *Group) append(add func() raft.Future) error {
	defer g.gate.Done(g.gate.Enter())
	return g.await(add())
}

// await waits for a Raft future, or until the replica closes: raft never
// answers a future still queued in its apply channel when it shuts down,
// and a request waiting on one would hold up the server's shutdown.
func (g *Group) await(f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-g.stop:
		return raft.ErrRaftShutdown
	}
}

// Status reports the replica's view of its shard, with the content digest
// when withDigest.
func (g *Group) Status(withDigest bool) wire.ShardStatus {
	st := wire.ShardStatus{Shard: g.shard, Replicas: g.Placement(), State: g.raft.State().String(),
		Leader: g.LeaderHint(), Term: g.raft.CurrentTerm(), LastIndex: g.raft.LastIndex(),
		Commit: g.raft.CommitIndex(), Applied: g.raft.AppliedIndex(), Keys: g.fsm.Store().Len(),
		Restores: g.fsm.Restores()}
	if last := g.raft.LastContact(); g.raft.State() != raft.Leader && !last.IsZero() {
		st.SinceContact = time.Since(last)
	}
	if withDigest {
		c, ok := g.fsm.SettledContent()
		st.Digest, st.Keys, st.StoreIndex, st.ContentMoving = c.Digest, c.Keys, c.Index, !ok
	}
	st.GateEntries, st.GateHeld = g.gate.Counts()
	log, snap := g.node.LogPositions()
	st.Snapshot, st.LastLogTerm = snap.Index, log.Term
	return st
}

// Store returns the shard's current store, for reads after ReadBarrier.
// A snapshot restore replaces it; callers take it anew for each batch.
func (g *Group) Store() store.Store { return g.fsm.Store() }

// Shard returns the shard this group replicates.
func (g *Group) Shard() int { return g.shard }

// halt ends the group's own watchers (its log bound's snapshots among
// them) and the pauses of a snapshot being written: the first step of
// close, which a server takes for all its groups before closing any.
func (g *Group) halt() {
	g.halted.Do(func() { close(g.stop) })
	g.fsm.Hurry()
}

func (g *Group) close() error {
	g.halt()
	g.node.Stop()
	err := g.raft.Shutdown().Error()
	_ = g.stream.Close()
	_ = g.transport.Close()
	g.wg.Wait()
	g.node.Wait()
	g.cache.Drop()
	if cerr := g.closeLogs(); err == nil {
		err = cerr
	}
	return err
}

// closeLogs closes the log store if it holds files.
func (g *Group) closeLogs() error { return raftstore.Close(g.logs) }

// ReadLease reports whether this replica may serve a read from its store
// now without a log entry: lease reads are on, it leads, it has applied
// every entry of earlier terms, and its lease holds. Otherwise the read
// needs ReadBarrier.
func (g *Group) ReadLease() bool {
	if !g.lease.On() {
		return false
	}
	term := g.raft.CurrentTerm()
	return g.raft.State() == raft.Leader && g.readyTerm.Load() == term && g.lease.Valid(term)
}
