package kvs

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/kvs/replica"
	"github.com/batchkv/batchkv/wire"
)

// replicatedBackend serves the shards this server replicates, and
// forwards what reaches it unrouted, or for the legacy RPCs, through a
// client that finds each shard's leader.
type replicatedBackend struct {
	set   *replica.Set
	apply *applier
	stats *Stats
	fwd   *client.Client
	log   *slog.Logger
	// staleReads plants a bug for tests (SetStaleReadsForTest).
	staleReads atomic.Bool
}

func (b *replicatedBackend) batch(args *wire.BatchArgs, reply *wire.BatchReply, cl *call) {
	layout := b.set.Layout()
	switch {
	case args.RingID == 0:
		reply.Results = make([]wire.Result, len(args.Ops))
		forward(b.fwd, b.stats, args.Ops, reply.Results)
	case args.RingID != layout.ID():
		reply.Status = wire.StatusWrongRing
		reply.Err = fmt.Sprintf("batch routed with layout %016x; this server's is %016x (%d shards, RF %d, servers %v)",
			args.RingID, layout.ID(), layout.Shards(), layout.RF(), layout.Servers())
		return
	default:
		reply.Results = make([]wire.Result, len(args.Ops))
		sh := int(args.Shard)
		if g := b.set.Group(sh); g != nil {
			b.serveShard(g, args, reply, cl)
		} else {
			fill(reply.Results, wire.StatusNotLeader)
			if sh < layout.Shards() {
				reply.Leader = layout.Servers()[layout.Preferred(sh)]
			}
		}
	}
	reply.Status = wire.StatusOK
}

func (b *replicatedBackend) one(op wire.Op, _ *call) wire.Result {
	res := make([]wire.Result, 1)
	forward(b.fwd, b.stats, []wire.Op{op}, res)
	return res[0]
}

func (b *replicatedBackend) shards(withDigest bool) []wire.ShardStatus {
	return b.set.Status(withDigest)
}

func (b *replicatedBackend) close() error { return errors.Join(b.fwd.Close(), b.set.Close()) }

// serveShard applies a batch on this replica of its shard. Reads are
// served first, after a read barrier, from the store; then the batch's
// writes become one log entry. A get that follows a write of its key in
// the same batch is answered from that write, once the write commits, so
// ops on one key keep their batch order.
func (b *replicatedBackend) serveShard(g *replica.Group, args *wire.BatchArgs, reply *wire.BatchReply, cl *call) {
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
	b.stats.add(&b.stats.Rejected, rejected)
	if len(reads) > 0 {
		// The bug planted by SetStaleReadsForTest: read-only batches skip
		// the barrier.
		if len(writes) > 0 || !b.staleReads.Load() {
			if err := g.ReadBarrier(); err != nil {
				for i := range results {
					if ops[i].Check() == wire.StatusOK {
						results[i] = wire.Result{Status: wire.StatusNotLeader}
					}
				}
				reply.Leader = g.LeaderHint()
				return
			}
		}
		if len(reads) == len(ops) {
			// Only reads, the common case: no copy.
			b.apply.apply(g.Store(), ops, results, cl)
		} else {
			sub := make([]wire.Result, len(reads))
			b.apply.apply(g.Store(), reads, sub, cl)
			for j, i := range readAt {
				results[i] = sub[j]
			}
		}
	}
	if len(writes) == 0 {
		return
	}
	entry := wire.AppendBatchArgs(nil, &wire.BatchArgs{Session: args.Session, Seq: args.Seq, Ops: writes})
	err := g.Write(entry, replica.ApplyTimeout)
	status := wire.StatusOK
	switch {
	case errors.Is(err, replica.ErrNotLeader):
		status = wire.StatusNotLeader
		reply.Leader = g.LeaderHint()
	case err != nil:
		status = wire.StatusUnknown
		reply.Leader = g.LeaderHint()
		if !errors.Is(err, replica.ErrLeadershipLost) {
			b.log.Warn("replicated write failed", "shard", g.Shard(), "err", err)
		}
	default:
		b.stats.add(&b.stats.Puts, puts)
		b.stats.add(&b.stats.Deletes, dels)
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
		b.stats.Gets.Add(uint64(len(shadow)))
	}
}

func fill(results []wire.Result, st wire.Status) {
	for i := range results {
		results[i] = wire.Result{Status: st}
	}
}
