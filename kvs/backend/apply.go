package backend

import (
	"runtime"
	"sync/atomic"

	"github.com/batchkv/batchkv/kvs/stats"
	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
)

const (
	// maxReplyValues caps the bytes of values one batch may read, so that
	// its reply fits in a frame (wire.MaxFrameBytes, with room for the
	// results' headers). Gets past it answer StatusTooLarge: without it,
	// 65,536 gets of one 1 MiB value would make the server build a 64 GiB
	// reply.
	maxReplyValues = wire.MaxFrameBytes - 1<<20
)

// Applier applies ops to a store and counts them in stats. Every backend
// reads and writes its stores through one. It keeps the reply budget
// (budget.go): a batch with gets waits while its connection or the server
// holds too many bytes of unwritten replies, reads values only in one of
// a few build slots, and charges what it read to its call.
type Applier struct {
	stats   *stats.Stats
	replies *Budget       // server-wide; nil in benchmarks that build backends by hand
	slots   chan struct{} // build slots; nil likewise
	// Limit bounds what the server's stores may hold (memory.go); nil
	// means no bound. Set before the first batch.
	Limit *StoreLimit
	// valueBytes is the mean value size read by the last batch, plus one:
	// the next batch sizes its value buffer from it.
	valueBytes atomic.Uint64
	// maxValues is the most bytes of values one batch reads: a frame's
	// worth, and at most half the server's reply budget (but one value of
	// the largest size, always), so that no one batch takes the server
	// over its budget alone. A batch that could, held unread by a stalled
	// peer, kept the budget over until the peer was closed, and peers
	// that each did so in turn starved every other reader for as long.
	maxValues int
}

// NewApplier returns an Applier that counts in st and keeps the
// server-wide reply budget replies, with a few build slots; nil replies
// means no budget and no slots (benchmarks that build backends by hand).
func NewApplier(st *stats.Stats, replies *Budget) *Applier {
	a := &Applier{stats: st, replies: replies, maxValues: maxReplyValues}
	if replies != nil {
		a.slots = make(chan struct{}, buildSlots())
		if replies.limit > 0 {
			a.maxValues = int(min(int64(maxReplyValues), max(replies.limit/2, wire.MaxValueBytes)))
		}
	}
	return a
}

// apply applies ops to st, in order, writing their results. The values
// read are copied into a store.Values, which the results' values alias;
// they are charged to cl (nil: charged to nothing) until its reply is
// written.
func (a *Applier) apply(st store.Store, ops []wire.Op, results []wire.Result, cl *Call) {
	a.applyAt(st, ops, nil, results, cl)
}

// applyAt is apply of the ops whose indexes at lists (every op for a nil
// at), each writing its result at its own index in results (see
// store.ApplyAt).
func (a *Applier) applyAt(st store.Store, ops []wire.Op, at []int32, results []wire.Result, cl *Call) {
	var gets, puts, dels, rejected uint64
	var written int64
	for i := range store.Selected(len(ops), at) {
		switch {
		case ops[i].Check() != wire.StatusOK:
			rejected++
		case ops[i].Code == wire.OpGet:
			gets++
		case ops[i].Code == wire.OpPut, ops[i].Code == wire.OpPutIf:
			puts++
			written += recordBytes(&ops[i])
		default:
			dels++
		}
	}
	if a.Limit.refuses(written) {
		at = refusePuts(ops, at, results)
		puts = 0
	}
	lost := gets > 0 && !a.admit(cl)
	vals := &store.Values{Limit: a.maxValues, Hint: a.valueBufSize(gets)}
	if lost {
		vals.Limit = 0 // accepts no value: the reply is never written
	}
	store.ApplyAt(st, ops, at, results, vals)
	if gets > 0 && !lost {
		if a.slots != nil {
			<-a.slots
		}
		a.valueBytes.Store(uint64(vals.Len())/gets + 1)
		// What the reply keeps alive, not just what it reads: a chunk
		// sized from an earlier batch's values may be mostly empty.
		a.charge(cl, int64(vals.Allocated()))
	}
	// One atomic add per counter per batch, not per op.
	a.stats.Add(&a.stats.Gets, gets)
	a.stats.Add(&a.stats.Puts, puts)
	a.stats.Add(&a.stats.Deletes, dels)
	a.stats.Add(&a.stats.Rejected, rejected)
}

// admit waits until cl's connection and the server are within their reply
// budgets while it holds a build slot, and returns true holding the slot;
// the caller gives it back. Checking under the slot bounds the overshoot:
// only the few slot holders can have passed the check and not yet charged
// what they read. It returns false, holding no slot, when the reply can
// no longer be written (replyLost): the batch then reads no values, so
// each of its gets, and each of its conditional puts of a key present
// (which would return the old value), answers wire.StatusTooLarge,
// unseen, and such a put is not applied, as when a reply is over its
// size; its other writes are. Else every batch a stalled peer had
// pipelined would read its values in turn, up to half the reply budget
// each, before its connection's handler or the server could end.
func (a *Applier) admit(cl *Call) bool {
	waited := false
	for {
		if cl != nil && cl.Conn.Wait() {
			waited = true
		}
		if a.replies != nil && a.replies.Wait() {
			waited = true
		}
		if a.replyLost(cl) {
			return false
		}
		if a.slots == nil {
			break
		}
		a.slots <- struct{}{}
		if (cl == nil || !cl.Conn.over()) && (a.replies == nil || !a.replies.over()) {
			break
		}
		<-a.slots // over again: wait without holding a slot
	}
	if waited {
		a.stats.BudgetWaits.Add(1)
	}
	return true
}

// replyLost reports whether cl's reply can no longer be written: its
// connection's budget is closed, as it is once the connection is, or the
// server's is, as it is first of all when the server closes. In the
// second case it waits until the connection's budget closes too (the
// server closes every connection's right after its own), so that no
// reply left unread is ever written. A batch of no connection (nil cl)
// has no reply to lose.
func (a *Applier) replyLost(cl *Call) bool {
	switch {
	case cl == nil:
		return false
	case cl.Conn.closed.Load():
		return true
	case a.replies == nil || !a.replies.closed.Load():
		return false
	}
	cl.Conn.awaitClose()
	return true
}

// valueBufSize guesses the bytes of values that a batch with gets gets
// will read, from the last batch's mean plus a quarter, so that most
// batches' values fit in one chunk.
func (a *Applier) valueBufSize(gets uint64) int {
	per := a.valueBytes.Load()
	if per == 0 {
		per = 64
	}
	return int(min(gets*per+gets*per/4, uint64(a.maxValues)))
}

// buildSlots is how many batches may read values from the stores at once.
// Reading is CPU-bound, so more would not go faster; fewer bound how far
// concurrent batches can overshoot the reply budgets before it is charged.
func buildSlots() int { return 2 * runtime.GOMAXPROCS(0) }

// charge charges n bytes of reply values to cl, its connection and the
// server, until the reply is written (Release).
func (a *Applier) charge(cl *Call, n int64) {
	if cl == nil || n == 0 {
		return
	}
	cl.charged += n
	cl.Conn.Charge(n)
	if a.replies != nil {
		a.replies.Charge(n)
	}
}

// Release gives back what cl's reply held charged, once it is written
// (or its connection is gone).
func (a *Applier) Release(cl *Call) {
	cl.Conn.Release(cl.charged)
	if a.replies != nil {
		a.replies.Release(cl.charged)
	}
	cl.charged = 0
}
