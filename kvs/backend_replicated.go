package kvs

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/kvs/replica"
	"github.com/batchkv/batchkv/kvs/stats"
	"github.com/batchkv/batchkv/wire"
)

// replicatedBackend serves the shards this server replicates, and
// forwards what reaches it unrouted, or for the legacy RPCs, through a
// client that finds each shard's leader.
type replicatedBackend struct {
	set   *replica.Set
	apply *applier
	stats *stats.Stats
	fwd   *client.Client
	// admin asks the meta group's replicas for the map (followMap).
	admin client.Admin
	log   *slog.Logger
	// staleReads plants a bug for tests (SetStaleReadsForTest).
	staleReads atomic.Bool
	// serveByMap plants a bug for tests (SetServeByMapForTest).
	serveByMap atomic.Bool
	// casOnLeader plants a bug for tests (SetCASOnLeaderForTest).
	casOnLeader atomic.Bool
	// stop ends followMap, which wg waits for.
	stop chan struct{}
	wg   sync.WaitGroup
}

func (b *replicatedBackend) batch(args *wire.BatchArgs, reply *wire.BatchReply, cl *call) {
	layout := b.set.Layout()
	switch {
	case args.RingID == 0:
		reply.Results = make([]wire.Result, len(args.Ops))
		forward(b.fwd, b.stats, args.Ops, reply.Results)
	case args.RingID != layout.ID():
		reply.Status = wire.StatusWrongRing
		reply.Err = fmt.Sprintf("batch routed with layout %016x; this server's is %016x (%d shards)",
			args.RingID, layout.ID(), layout.Shards())
		return
	default:
		reply.Results = make([]wire.Result, len(args.Ops))
		sh := int(args.Shard)
		if g := b.set.Group(sh); g != nil {
			b.serveShard(g, args, reply, cl)
		} else {
			// Not here under this server's map: the sender's map is
			// stale (or this one is), a redirect like Redis's MOVED.
			fill(reply.Results, wire.StatusMoved)
			if m := b.set.Map(); sh < m.Shards {
				reply.Leader = m.Placement[sh][0]
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

func (b *replicatedBackend) close() error {
	close(b.stop)
	b.wg.Wait()
	return errors.Join(b.fwd.Close(), b.set.Close())
}

func fill(results []wire.Result, st wire.Status) {
	for i := range results {
		results[i] = wire.Result{Status: st}
	}
}
