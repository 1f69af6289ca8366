package backend

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

// Replicated serves the shards this server replicates, and
// forwards what reaches it unrouted, or for the legacy RPCs, through a
// client that finds each shard's leader.
type Replicated struct {
	set   *replica.Set
	apply *Applier
	stats *stats.Stats
	fwd   *client.Client
	// admin asks the meta group's replicas for the map (followMap).
	admin client.Admin
	log   *slog.Logger
	// Planted are bugs only tests plant.
	Planted Planted
	// stop ends followMap, which wg waits for.
	stop chan struct{}
	wg   sync.WaitGroup
}

// Planted are bugs that tests plant in a replicated server for the
// linearizability checker to catch (kvs's export_test.go); nothing else
// sets them.
type Planted struct {
	// StaleReads: every replica serves gets from its own memory, leader
	// or not, with no read barrier.
	StaleReads atomic.Bool
	// ServeByMap: a replica that the map names its shard's preferred one
	// serves the shard's read-only batches from its own store, leader or
	// not.
	ServeByMap atomic.Bool
	// CASOnLeader: a leader decides each conditional put on its own store
	// before the batch goes into the log (planted.DecideBeforeLog).
	CASOnLeader atomic.Bool
	// IgnorePeerStores: a leader takes puts while a peer replicating the
	// shard says its stores are near their share of memory.
	IgnorePeerStores atomic.Bool
}

// NewReplicated returns the backend of a server that replicates the
// shards of set, and forwards through fwd what reaches it unrouted. It
// follows the shard map, asking the meta group's replicas through admin,
// until Close.
func NewReplicated(set *replica.Set, apply *Applier, stats *stats.Stats, fwd *client.Client, admin client.Admin, log *slog.Logger) *Replicated {
	b := &Replicated{set: set, apply: apply, stats: stats, fwd: fwd, admin: admin, log: log, stop: make(chan struct{})}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.followMap(b.stop)
	}()
	return b
}

// Set returns the server's replicas of its shards.
func (b *Replicated) Set() *replica.Set { return b.set }

// StoreStats returns what the server's stores hold against their share of
// memory; nil without -max-memory.
func (b *Replicated) StoreStats() *wire.StoreStats { return b.apply.Limit.Stats() }

// Batch implements Backend.
func (b *Replicated) Batch(args *wire.BatchArgs, reply *wire.BatchReply, cl *Call) {
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

// One implements Backend.
func (b *Replicated) One(op wire.Op, _ *Call) wire.Result {
	res := make([]wire.Result, 1)
	forward(b.fwd, b.stats, []wire.Op{op}, res)
	return res[0]
}

// Shards implements Backend.
func (b *Replicated) Shards(withDigest bool) []wire.ShardStatus {
	return b.set.Status(withDigest)
}

// Keys implements Backend: the keys of the shards this server leads.
func (b *Replicated) Keys() int {
	n := 0
	for _, sh := range b.set.Status(false) {
		if sh.State == "Leader" {
			n += sh.Keys
		}
	}
	return n
}

// Close implements Backend.
func (b *Replicated) Close() error {
	close(b.stop)
	b.wg.Wait()
	return errors.Join(b.fwd.Close(), b.set.Close())
}

// fill answers every op with st.
func fill(results []wire.Result, st wire.Status) {
	for i := range results {
		results[i] = wire.Result{Status: st}
	}
}
