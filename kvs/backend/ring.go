package backend

import (
	"context"
	"fmt"
	"time"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/kvs/stats"
	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/ring"
	"github.com/batchkv/batchkv/wire"
)

// forwardTimeout bounds an op forwarded to the server that owns it.
const forwardTimeout = 10 * time.Second

// Ring is the backend of one of several memory-only servers: it owns the keys the
// ring gives it and forwards the others to their owners.
//
// A batch routed with this server's ring (args.RingID equal to its ID) is
// applied as is. A batch with RingID 0 is unrouted: ops this server owns
// are applied here and the rest are forwarded. A batch routed with some
// other ring is rejected whole with StatusWrongRing, since applying it
// could put a key on a server that does not own it.
type Ring struct {
	store store.Store
	apply *Applier
	stats *stats.Stats
	ring  *ring.Ring
	self  int            // our index in ring
	fwd   *client.Client // to the other servers
}

// NewRing returns the backend of the server at index self of r's nodes,
// which keeps its keys in st and forwards the others through fwd.
func NewRing(st store.Store, apply *Applier, stats *stats.Stats, r *ring.Ring, self int, fwd *client.Client) *Ring {
	return &Ring{store: st, apply: apply, stats: stats, ring: r, self: self, fwd: fwd}
}

// Ring returns the ring that places keys on the servers.
func (b *Ring) Ring() *ring.Ring { return b.ring }

// Batch implements Backend.
func (b *Ring) Batch(args *wire.BatchArgs, reply *wire.BatchReply, cl *Call) {
	switch {
	case args.RingID == b.ring.ID():
		reply.Results = make([]wire.Result, len(args.Ops))
		b.apply.apply(b.store, args.Ops, reply.Results, cl)
	case args.RingID != 0:
		reply.Status = wire.StatusWrongRing
		reply.Err = fmt.Sprintf("batch routed with ring %016x; this server's ring is %016x over %v",
			args.RingID, b.ring.ID(), b.ring.Nodes())
		return
	default:
		reply.Results = make([]wire.Result, len(args.Ops))
		b.route(args.Ops, reply.Results, cl)
	}
	reply.Status = wire.StatusOK
}

// One implements Backend.
func (b *Ring) One(op wire.Op, cl *Call) wire.Result {
	res := make([]wire.Result, 1)
	b.route([]wire.Op{op}, res, cl)
	return res[0]
}

// route applies the ops this server owns and forwards the rest. Ops on one
// key all go the same way, so they keep their batch order.
func (b *Ring) route(ops []wire.Op, results []wire.Result, cl *Call) {
	var local, remote []wire.Op
	var localAt, remoteAt []int
	for i := range ops {
		if ops[i].Check() != wire.StatusOK || b.ring.Owner(ops[i].Key) == b.self {
			local = append(local, ops[i])
			localAt = append(localAt, i)
		} else {
			remote = append(remote, ops[i])
			remoteAt = append(remoteAt, i)
		}
	}
	sub := make([]wire.Result, len(local))
	b.apply.apply(b.store, local, sub, cl)
	for j, i := range localAt {
		results[i] = sub[j]
	}
	if len(remote) == 0 {
		return
	}
	sub = make([]wire.Result, len(remote))
	forward(b.fwd, b.stats, remote, sub)
	for j, i := range remoteAt {
		results[i] = sub[j]
	}
}

// Shards implements Backend: a Ring backend replicates nothing.
func (b *Ring) Shards(bool) []wire.ShardStatus { return nil }

// Keys implements Backend.
func (b *Ring) Keys() int { return b.store.Len() }

// Close implements Backend.
func (b *Ring) Close() error { return b.fwd.Close() }

// forward sends ops through fwd, which finds each key's owner (or shard
// leader), and writes their results. Concurrent batches (a RESP client's
// pipelines, most of all) share fwd's requests to each owner or shard
// (client.DoShared): at RF=3 a shard then commits fewer, larger log
// entries and read barriers.
func forward(fwd *client.Client, stats *stats.Stats, ops []wire.Op, results []wire.Result) {
	stats.Forwarded.Add(uint64(len(ops)))
	ctx, cancel := context.WithTimeout(context.Background(), forwardTimeout)
	defer cancel()
	// On error, DoShared has already marked the failed ops unavailable.
	_ = fwd.DoShared(ctx, ops, results)
}
