package kvs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// replication is the replicated side of a server: the shards it hosts, one
// Raft group each, and a client that reaches any shard's leader.
type replication struct {
	layout *shard.Layout
	self   string
	groups []*replicaGroup // by shard; nil where this server hosts no replica
	fwd    *client.Client
	log    *slog.Logger
}

const (
	// replicaApplyTimeout bounds the wait to hand an entry to Raft.
	replicaApplyTimeout = 5 * time.Second
	// defaultSessionTTL is how long a shard remembers a client session
	// after its last batch. A batch retried later than this after its
	// first attempt may apply twice.
	defaultSessionTTL = 10 * time.Minute
)

func openReplication(cfg *Config) (*replication, error) {
	servers := cfg.Peers
	if len(servers) == 0 {
		servers = []string{cfg.Self}
	}
	layout, err := shard.New(servers, cfg.Shards, max(cfg.Replicas, 1), cfg.VirtualNodes)
	if err != nil {
		return nil, fmt.Errorf("kvs: %w", err)
	}
	me := slices.Index(servers, cfg.Self)
	newStore := storeMaker(cfg.Store)
	dial := cfg.DialRaft
	if dial == nil {
		dial = defaultDial
	}
	r := &replication{layout: layout, self: cfg.Self, groups: make([]*replicaGroup, layout.Shards()), log: cfg.Logger}
	for _, sh := range layout.Hosted(me) {
		var reps []string
		for _, i := range layout.Replicas(sh) {
			reps = append(reps, servers[i])
		}
		g, err := openGroup(groupConfig{
			shard: sh, self: cfg.Self, replicas: reps, dir: filepath.Join(cfg.DataDir, fmt.Sprintf("shard-%d", sh)),
			noSync: cfg.NoSync, timing: cfg.Raft, dial: dial, newStore: newStore, sessionTT: cfg.SessionTTL, log: cfg.Logger,
		})
		if err != nil {
			_ = r.close()
			return nil, err
		}
		r.groups[sh] = g
	}
	r.fwd, err = client.New(client.Config{Servers: servers, VirtualNodes: cfg.VirtualNodes,
		Replicas: layout.RF(), Shards: layout.Shards()})
	if err != nil {
		_ = r.close()
		return nil, fmt.Errorf("kvs: forwarding client: %w", err)
	}
	return r, nil
}

// storeMaker returns a constructor of empty stores of proto's kind; the
// default kind for a store of another type (tests wrap stores).
func storeMaker(proto Store) func() Store {
	if _, ok := proto.(*SyncMapStore); ok {
		return func() Store { return NewSyncMapStore() }
	}
	return func() Store { return NewArenaStore() }
}

func (r *replication) close() error {
	var errs []error
	if r.fwd != nil {
		errs = append(errs, r.fwd.Close())
	}
	for _, g := range r.groups {
		if g != nil {
			errs = append(errs, g.close())
		}
	}
	return errors.Join(errs...)
}

// acceptRaft hands an inbound Raft connection to its shard's transport.
func (r *replication) acceptRaft(c net.Conn, sh int) error {
	if sh < 0 || sh >= len(r.groups) || r.groups[sh] == nil {
		return fmt.Errorf("%w: shard %d", errNoSuchShard, sh)
	}
	g := r.groups[sh]
	if !g.stream.offer(&watchedConn{Conn: c, ended: g.suspectLeader}) {
		return net.ErrClosed
	}
	return nil
}

// status reports every hosted shard.
func (r *replication) status(withDigest bool) []wire.ShardStatus {
	var out []wire.ShardStatus
	for _, g := range r.groups {
		if g != nil {
			out = append(out, g.status(withDigest))
		}
	}
	return out
}

// replicatedBatch serves a BatchOp in a replicated cluster.
func (s *Service) replicatedBatch(args *wire.BatchArgs, reply *wire.BatchReply) {
	r := s.repl
	switch {
	case args.RingID == 0:
		// Unrouted: let the forwarding client find each key's leader.
		reply.Results = make([]wire.Result, len(args.Ops))
		s.forward(args.Ops, reply.Results)
		s.stats.countResults(reply.Results)
		return
	case args.RingID != r.layout.ID():
		reply.Status = wire.StatusWrongRing
		reply.Err = fmt.Sprintf("batch routed with layout %016x; this server's is %016x (%d shards, RF %d, servers %v)",
			args.RingID, r.layout.ID(), r.layout.Shards(), r.layout.RF(), r.layout.Servers())
		s.stats.Results[wire.StatusWrongRing].Add(uint64(len(args.Ops)))
		return
	}
	reply.Results = make([]wire.Result, len(args.Ops))
	sh := int(args.Shard)
	if sh >= len(r.groups) || r.groups[sh] == nil {
		fill(reply.Results, wire.StatusNotLeader)
		if sh < r.layout.Shards() {
			reply.Leader = r.layout.Servers()[r.layout.Preferred(sh)]
		}
	} else {
		s.serveShard(r.groups[sh], args, reply)
	}
	s.stats.countResults(reply.Results)
}

// serveShard applies a batch on this replica of its shard. Reads are
// served first, after a read barrier, from the store; then the batch's
// writes become one log entry. A get that follows a write of its key in
// the same batch is answered from that write, once the write commits, so
// ops on one key keep their batch order.
func (s *Service) serveShard(g *replicaGroup, args *wire.BatchArgs, reply *wire.BatchReply) {
	ops, results := args.Ops, reply.Results
	var reads, writes []wire.Op
	var readAt, writeAt []int
	var lastWrite map[string]int // key -> index in ops of its last write so far
	var shadow map[int]int       // get index -> index of the write it reads
	var rejected, puts, dels uint64
	for i := range ops {
		op := &ops[i]
		if st := op.Check(); st != wire.StatusOK {
			results[i] = wire.Result{Status: st}
			rejected++
			continue
		}
		if op.Code == wire.OpGet {
			if w, ok := lastWrite[op.Key]; ok {
				if shadow == nil {
					shadow = map[int]int{}
				}
				shadow[i] = w
				continue
			}
			reads = append(reads, *op)
			readAt = append(readAt, i)
			continue
		}
		if lastWrite == nil {
			lastWrite = map[string]int{}
		}
		lastWrite[op.Key] = i
		writes = append(writes, *op)
		writeAt = append(writeAt, i)
		if op.Code == wire.OpPut {
			puts++
		} else {
			dels++
		}
	}
	if rejected > 0 {
		s.stats.Rejected.Add(rejected)
	}
	notLeader := func() {
		for i := range results {
			if ops[i].Check() == wire.StatusOK {
				results[i] = wire.Result{Status: wire.StatusNotLeader}
			}
		}
		reply.Leader = g.leaderHint()
	}
	if len(reads) > 0 {
		// The bug planted by SetStaleReadsForTest: read-only batches skip
		// the barrier.
		if len(writes) > 0 || !s.staleReads.Load() {
			if err := g.readBarrier(); err != nil {
				notLeader()
				return
			}
		}
		if len(reads) == len(ops) {
			// Only reads, the common case: no copy.
			s.applyTo(g.fsm.current(), ops, results)
		} else {
			sub := make([]wire.Result, len(reads))
			s.applyTo(g.fsm.current(), reads, sub)
			for j, i := range readAt {
				results[i] = sub[j]
			}
		}
	}
	if len(writes) == 0 {
		return
	}
	entry := wire.AppendBatchArgs(nil, &wire.BatchArgs{Session: args.Session, Seq: args.Seq, Ops: writes})
	_, err := g.write(entry, replicaApplyTimeout)
	status := wire.StatusOK
	switch {
	case errors.Is(err, errNotLeader):
		status = wire.StatusNotLeader
		reply.Leader = g.leaderHint()
	case err != nil:
		status = wire.StatusUnknown
		reply.Leader = g.leaderHint()
		if !errors.Is(err, raft.ErrLeadershipLost) {
			s.repl.log.Warn("replicated write failed", "shard", g.shard, "err", err)
		}
	default:
		s.stats.Puts.Add(puts)
		s.stats.Deletes.Add(dels)
	}
	for _, i := range writeAt {
		results[i] = wire.Result{Status: status}
	}
	for i, w := range shadow {
		switch {
		case status != wire.StatusOK:
			results[i] = wire.Result{Status: status}
		case ops[w].Code == wire.OpPut:
			results[i] = wire.Result{Status: wire.StatusOK, Value: ops[w].Value}
		default:
			results[i] = wire.Result{Status: wire.StatusNotFound}
		}
	}
	if len(shadow) > 0 && status == wire.StatusOK {
		s.stats.Gets.Add(uint64(len(shadow)))
	}
}

// forward sends ops through the forwarding client, which finds each
// shard's leader.
func (s *Service) forward(ops []wire.Op, results []wire.Result) {
	s.stats.Forwarded.Add(uint64(len(ops)))
	ctx, cancel := context.WithTimeout(context.Background(), forwardTimeout)
	defer cancel()
	_ = s.repl.fwd.DoInto(ctx, ops, results)
}

func fill(results []wire.Result, st wire.Status) {
	for i := range results {
		results[i] = wire.Result{Status: st}
	}
}
