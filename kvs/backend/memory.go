package backend

import (
	"github.com/batchkv/batchkv/kvs/replica"
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
// applying at once can overshoot by what they write. On a replicated
// server the shard's leader makes it, and also refuses the puts while
// another replica of the shard said in the leaders' poll of their peers
// (diskspace.Watch.PeersStoresNear) that its own stores are near their
// limit: a follower's stores can overshoot by what its leaders commit
// before they hear.
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

// Stats returns what the stores hold against the limit, for the Status
// RPC; nil for a nil limit.
func (l *StoreLimit) Stats() *wire.StoreStats {
	if l == nil {
		return nil
	}
	return &wire.StoreStats{Bytes: uint64(max(l.acct.Bytes(), 0)), Limit: uint64(l.limit)}
}

// mustRefusePuts reports whether g, its shard's leader, must refuse a
// batch's puts of n bytes of records: they would take this server's
// stores past their limit, or another replica of the shard said in a
// recent poll that its own are near theirs (unless
// Planted.IgnorePeerStores). A replica that does not lead refuses
// nothing here: its write fails with ErrNotLeader, which names the
// leader.
func (b *Replicated) mustRefusePuts(g *replica.Group, n int64) bool {
	if n <= 0 || !g.Leads() {
		return false
	}
	return b.apply.Limit.refuses(n) || !b.Planted.IgnorePeerStores.Load() && g.PeersStoresNear()
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
