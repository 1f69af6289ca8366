package backend

import (
	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
)

// StoreLimit is the share of a server's memory that its stores may take
// (kvs.Config.MaxMemory less what the heap is given). A batch whose puts
// would take the stores past it has them answered wire.StatusNoMemory and
// not applied, as Redis answers a write past its maxmemory with its OOM
// error; its gets are served, and so are its deletes, which give memory
// back (on a replicated server, a batch's writes go in one log entry and
// are refused together: its deletes then go again alone). Nothing is
// evicted. The check is made before a batch applies, so the batches
// applying at once can overshoot by what they write; on a replicated
// server the shard's leader makes it, and a follower applies what its
// leader sent whatever its own use.
type StoreLimit struct {
	limit int64          // bytes; 0 means none
	acct  *store.Account // the server's stores
}

// NewStoreLimit returns the limit of limit bytes (0: none) on the stores
// counted in acct, and sets it as acct's (store.Account.SetLimit), so
// that the stores compact harder as they near it.
func NewStoreLimit(limit int64, acct *store.Account) *StoreLimit {
	acct.SetLimit(limit)
	return &StoreLimit{limit: limit, acct: acct}
}

// Limit returns the limit in bytes; 0 means none.
func (l *StoreLimit) Limit() int64 {
	if l == nil {
		return 0
	}
	return l.limit
}

// refuses reports whether a batch that writes n bytes of records must be
// refused.
func (l *StoreLimit) refuses(n int64) bool {
	return l != nil && l.limit > 0 && n > 0 && l.acct.Bytes()+n > l.limit
}

// refusePuts answers the puts of the ops at (every op for a nil at)
// with wire.StatusNoMemory and returns the indexes of the other ops.
func refusePuts(ops []wire.Op, at []int32, results []wire.Result) []int32 {
	rest := make([]int32, 0, len(ops))
	for i := range store.Selected(len(ops), at) {
		if op := &ops[i]; (op.Code == wire.OpPut || op.Code == wire.OpPutIf) && op.Check() == wire.StatusOK {
			results[i] = wire.Result{Status: wire.StatusNoMemory}
			continue
		}
		rest = append(rest, int32(i))
	}
	return rest
}

// recordBytes is what an op writing key and value costs a store.
func recordBytes(op *wire.Op) int64 { return int64(len(op.Key) + len(op.Value) + recordOverhead) }

// recordOverhead is what a record costs a store beyond its key and value:
// a header and about a slot and a half of its table.
const recordOverhead = 24
