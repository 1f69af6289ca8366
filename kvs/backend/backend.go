// Package backend applies the ops that reach a batchkv server (package
// kvs). The server picks one Backend when it starts, from its Config:
//
//   - Local: one server that owns every key (memory only);
//   - Ring: one of several memory-only servers, each owning the keys that
//     the ring gives it and forwarding the rest (ring.go);
//   - Replicated: shards that are Raft groups (package kvs/replica): a
//     batch for a shard becomes one log entry (shard.go), membership
//     steps run here (membership.go), and the server follows the shard
//     map that the meta group stores (mapfollow.go).
//
// Every backend reads and writes its stores through an Applier (apply.go),
// which counts ops and keeps the reply budget (budget.go): the bytes of
// values that replies hold until they are written.
package backend

import (
	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
)

// Backend serves the ops that reach a server's Service.
type Backend interface {
	// Batch serves a BatchOp of at most wire.MaxBatchOps ops: it sets
	// reply.Status, and when that is StatusOK one result per op in
	// reply.Results. The values read are charged to cl (nil: to nothing).
	Batch(args *wire.BatchArgs, reply *wire.BatchReply, cl *Call)
	// One serves a single valid op of the course skeleton's RPCs.
	One(op wire.Op, cl *Call) wire.Result
	// Shards reports the replicated shards this server hosts, with their
	// content digests when withDigest; nil when it replicates nothing.
	Shards(withDigest bool) []wire.ShardStatus
	// Keys is how many keys the server holds; for a replicated server,
	// those of the shards it leads.
	Keys() int
	// Close releases what the backend holds. It is called once.
	Close() error
}

// Local is a server that owns every key.
type Local struct {
	store store.Store
	apply *Applier
}

// NewLocal returns the backend of a server that owns every key, in st.
func NewLocal(st store.Store, apply *Applier) *Local { return &Local{store: st, apply: apply} }

// Batch implements Backend.
func (b *Local) Batch(args *wire.BatchArgs, reply *wire.BatchReply, cl *Call) {
	reply.Status = wire.StatusOK
	reply.Results = make([]wire.Result, len(args.Ops))
	b.apply.apply(b.store, args.Ops, reply.Results, cl)
}

// One implements Backend.
func (b *Local) One(op wire.Op, cl *Call) wire.Result {
	res := make([]wire.Result, 1)
	b.apply.apply(b.store, []wire.Op{op}, res, cl)
	return res[0]
}

// Shards implements Backend: a Local backend replicates nothing.
func (b *Local) Shards(bool) []wire.ShardStatus { return nil }

// Keys implements Backend.
func (b *Local) Keys() int { return b.store.Len() }

// Close implements Backend.
func (b *Local) Close() error { return nil }
