package kvs

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/batchkv/batchkv/wire"
)

// RaftTiming holds the Raft timeouts and log bounds of every shard.
type RaftTiming struct {
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
	SnapshotThreshold uint64
	TrailingLogs      uint64
	// SnapshotInterval is how often a shard checks SnapshotThreshold.
	SnapshotInterval time.Duration
}

// DefaultRaftTiming returns the timing the servers run with; README
// "Replication" explains the choice. With 250 ms of added one-way latency
// on the leader's links, a heartbeat round trip takes 500 ms plus the
// 80-160 ms heartbeat interval, under the 800 ms a follower waits. A
// killed leader is replaced at once (replica_failover.go), a silent one
// once a majority has not heard from it for 800 ms (replica_silence.go).
func DefaultRaftTiming() RaftTiming {
	return RaftTiming{
		HeartbeatTimeout:   800 * time.Millisecond,
		ElectionTimeout:    800 * time.Millisecond,
		LeaderLeaseTimeout: 800 * time.Millisecond,
		SnapshotThreshold:  1024,
		TrailingLogs:       1024,
		SnapshotInterval:   10 * time.Second,
	}
}

// replicaGroup is this server's replica of one shard: a Raft node, its log
// and snapshot stores, and the shard's state machine.
type replicaGroup struct {
	shard     int
	self      string
	preferred string
	replicas  []string
	raft      *raft.Raft
	fsm       *shardFSM
	stream    *shardStream
	transport *raft.NetworkTransport
	dial      DialFunc
	heartbeat time.Duration // the heartbeat timeout
	suspect   chan struct{} // an inbound Raft connection ended
	logs      *raftboltdb.BoltStore
	log       *slog.Logger

	// readyTerm is the term in which this replica, as leader, has applied
	// every entry committed before it: reads are served only in that term.
	readyTerm atomic.Uint64

	notify   chan bool
	observed chan raft.Observation
	observer *raft.Observer
	stop     chan struct{}
	wg       sync.WaitGroup
}

// groupConfig is what opening a replica group needs.
type groupConfig struct {
	shard     int
	self      string
	replicas  []string // addresses, preferred leader first
	dir       string
	noSync    bool
	timing    RaftTiming
	dial      DialFunc
	newStore  func() Store
	sessionTT time.Duration
	log       *slog.Logger
}

func openGroup(gc groupConfig) (g *replicaGroup, err error) {
	if err := os.MkdirAll(gc.dir, 0o755); err != nil {
		return nil, fmt.Errorf("kvs: shard %d data dir: %w", gc.shard, err)
	}
	g = &replicaGroup{shard: gc.shard, self: gc.self, preferred: gc.replicas[0], replicas: gc.replicas,
		log: gc.log.With("shard", gc.shard), notify: make(chan bool, 16),
		observed: make(chan raft.Observation, 64), stop: make(chan struct{}), dial: gc.dial, heartbeat: gc.timing.HeartbeatTimeout, suspect: make(chan struct{}, 1)}
	g.fsm = newShardFSM(gc.newStore, gc.sessionTT)
	g.logs, err = raftboltdb.New(raftboltdb.Options{Path: filepath.Join(gc.dir, "raft.db"), NoSync: gc.noSync})
	if err != nil {
		return nil, fmt.Errorf("kvs: shard %d log: %w", gc.shard, err)
	}
	defer func() {
		if err != nil {
			_ = g.logs.Close()
		}
	}()
	hlog := hclog.New(&hclog.LoggerOptions{Name: fmt.Sprintf("raft-shard-%d", gc.shard), Level: hclog.Warn, Output: os.Stderr})
	snaps, err := raft.NewFileSnapshotStoreWithLogger(gc.dir, 2, hlog)
	if err != nil {
		return nil, fmt.Errorf("kvs: shard %d snapshots: %w", gc.shard, err)
	}
	cached, err := raft.NewLogCache(1024, g.logs)
	if err != nil {
		return nil, err
	}
	g.stream = newShardStream(gc.shard, gc.self, gc.dial)
	g.transport = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: g.stream, MaxPool: 3, Timeout: 10 * time.Second, Logger: hlog,
	})
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(gc.self)
	rc.HeartbeatTimeout = gc.timing.HeartbeatTimeout
	rc.ElectionTimeout = gc.timing.ElectionTimeout
	rc.LeaderLeaseTimeout = gc.timing.LeaderLeaseTimeout
	rc.SnapshotThreshold = gc.timing.SnapshotThreshold
	rc.TrailingLogs = gc.timing.TrailingLogs
	rc.SnapshotInterval = gc.timing.SnapshotInterval
	rc.MaxAppendEntries = 256 // entries per append RPC and per disk write: the group commit
	rc.BatchApplyCh = true
	rc.NotifyCh = g.notify
	rc.Logger = hlog
	existing, err := raft.HasExistingState(cached, g.logs, snaps)
	if err != nil {
		return nil, err
	}
	g.raft, err = raft.NewRaft(rc, g.fsm, cached, g.logs, snaps, g.transport)
	if err != nil {
		_ = g.transport.Close()
		return nil, fmt.Errorf("kvs: shard %d raft: %w", gc.shard, err)
	}
	if !existing {
		var conf raft.Configuration
		for _, r := range gc.replicas {
			conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(r), Address: raft.ServerAddress(r)})
		}
		if err := g.raft.BootstrapCluster(conf).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			_ = g.raft.Shutdown().Error()
			return nil, fmt.Errorf("kvs: shard %d bootstrap: %w", gc.shard, err)
		}
	}
	g.observer = raft.NewObserver(g.observed, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.FailedHeartbeatObservation, raft.ResumedHeartbeatObservation:
			return true
		}
		return false
	})
	g.raft.RegisterObserver(g.observer)
	g.wg.Add(4)
	go g.watchLeadership()
	go g.watchPeers()
	go g.watchLeaderDeath()
	go g.watchSilence()
	return g, nil
}

// watchLeadership makes a new leader ready for reads: once a barrier in
// its term has applied every earlier entry, reads may be served.
func (g *replicaGroup) watchLeadership() {
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
			if err := g.await(g.raft.Barrier(10 * time.Second)); err != nil {
				continue
			}
			if g.raft.CurrentTerm() == term && g.raft.State() == raft.Leader {
				g.readyTerm.Store(term)
			}
		}
	}
}

// watchPeers tracks which followers fail heartbeats, and hands leadership
// back to the shard's preferred replica once it is healthy again, so that
// leaders stay spread over the servers after a failover.
func (g *replicaGroup) watchPeers() {
	defer g.wg.Done()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	var leaderSince time.Time
	failing := map[string]bool{}           // peers whose heartbeats fail, as a leader sees
	healthySince := map[string]time.Time{} // when a failing peer answered again
	for {
		select {
		case <-g.stop:
			return
		case o := <-g.observed:
			switch d := o.Data.(type) {
			case raft.FailedHeartbeatObservation:
				failing[string(d.PeerID)] = true
				delete(healthySince, string(d.PeerID))
			case raft.ResumedHeartbeatObservation:
				delete(failing, string(d.PeerID))
				healthySince[string(d.PeerID)] = time.Now()
			}
		case <-tick.C:
			if g.raft.State() != raft.Leader {
				leaderSince = time.Time{}
				continue
			}
			if leaderSince.IsZero() {
				leaderSince = time.Now()
			}
			if g.self == g.preferred || time.Since(leaderSince) < time.Second {
				continue
			}
			if failing[g.preferred] {
				continue
			}
			if t, ok := healthySince[g.preferred]; ok && time.Since(t) < 5*time.Second {
				continue
			}
			g.log.Info("handing leadership to the preferred replica", "to", g.preferred)
			if err := g.raft.LeadershipTransferToServer(raft.ServerID(g.preferred), raft.ServerAddress(g.preferred)).Error(); err != nil {
				g.log.Info("leadership transfer failed", "to", g.preferred, "err", err)
			}
			leaderSince = time.Time{}
		}
	}
}

// leaderHint returns the address of the shard's leader as this replica
// knows it, or "".
func (g *replicaGroup) leaderHint() string {
	addr, _ := g.raft.LeaderWithID()
	return string(addr)
}

// errNotLeader says this replica cannot serve the shard now.
var errNotLeader = errors.New("kvs: not the leader")

// readBarrier returns nil once a read that started before the call may be
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
func (g *replicaGroup) readBarrier() error {
	term := g.raft.CurrentTerm()
	if g.raft.State() != raft.Leader || g.readyTerm.Load() != term {
		return errNotLeader
	}
	if err := g.await(g.raft.Barrier(replicaApplyTimeout)); err != nil || g.raft.CurrentTerm() != term {
		return errNotLeader
	}
	return nil
}

// write replicates one encoded batch and waits until it is committed and
// applied. It returns errNotLeader when the entry was certainly not
// appended, and another error when its fate is unknown.
func (g *replicaGroup) write(entry []byte, timeout time.Duration) (applyResult, error) {
	f := g.raft.Apply(entry, timeout)
	if err := g.await(f); err != nil {
		switch {
		case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrEnqueueTimeout),
			errors.Is(err, raft.ErrLeadershipTransferInProgress):
			return applyResult{}, errNotLeader
		}
		return applyResult{}, err
	}
	res, _ := f.Response().(applyResult)
	return res, res.err
}

// await waits for a Raft future, or until the replica closes: raft never
// answers a future still queued in its apply channel when it shuts down,
// and a request waiting on one would hold up the server's shutdown.
func (g *replicaGroup) await(f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-g.stop:
		return raft.ErrRaftShutdown
	}
}

// status reports the replica's view of its shard, with the content digest
// when withDigest.
func (g *replicaGroup) status(withDigest bool) wire.ShardStatus {
	st := wire.ShardStatus{Shard: g.shard, Replicas: g.replicas, State: g.raft.State().String(),
		Leader: g.leaderHint(), Term: g.raft.CurrentTerm(), LastIndex: g.raft.LastIndex(),
		Commit: g.raft.CommitIndex(), Applied: g.raft.AppliedIndex(), Keys: g.fsm.current().Len(),
		Restores: g.fsm.restores.Load()}
	if last := g.raft.LastContact(); g.raft.State() != raft.Leader && !last.IsZero() {
		st.SinceContact = time.Since(last)
	}
	if withDigest {
		st.Digest = g.fsm.digest()
	}
	if s, ok := g.raft.Stats()["last_snapshot_index"]; ok {
		_, _ = fmt.Sscan(s, &st.Snapshot)
	}
	return st
}

func (g *replicaGroup) close() error {
	close(g.stop)
	g.raft.DeregisterObserver(g.observer)
	err := g.raft.Shutdown().Error()
	_ = g.stream.Close()
	_ = g.transport.Close()
	g.wg.Wait()
	if cerr := g.logs.Close(); err == nil {
		err = cerr
	}
	return err
}
