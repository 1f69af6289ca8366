package kvs

import (
	"sync"
	"sync/atomic"
)

// The reply budget. A batch's gets copy values into a buffer that its
// reply aliases until the reply is written, so a peer that pipelines
// requests for large values and never reads the replies would make the
// server hold them all. Three things bound that memory:
//
//   - a batch reads values only while holding one of a few build slots
//     (buildSlots), so few can overshoot the budgets at once;
//   - it waits, holding no slot, while its connection holds more than
//     Limits.ConnReplyBudget, or the server more than Limits.ReplyBudget,
//     of values in unwritten replies (unless the connection, or the server,
//     holds none, so one large reply always proceeds), and checks again
//     once it holds a slot;
//   - once built, the reply's value bytes are charged to both until the
//     reply is written or its connection dies (a peer that does not read
//     is cut off after Limits.WriteTimeout).
//
// The simpler alternative, reserving the largest possible reply before a
// batch runs, would make every 8192-get batch reserve 63 MiB and serialize
// the standard run; charging what was actually read costs nothing there.

// budget counts bytes held and lets callers wait while it is over a limit.
type budget struct {
	limit int64
	held  atomic.Int64

	mu   sync.Mutex
	cond *sync.Cond // signalled when held goes down
}

func newBudget(limit int64) *budget {
	b := &budget{limit: limit}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// over reports whether something is held and the limit is reached.
func (b *budget) over() bool {
	h := b.held.Load()
	return h > 0 && h >= b.limit
}

// wait blocks while the budget is over its limit; it returns whether it
// had to wait.
func (b *budget) wait() bool {
	if !b.over() {
		return false
	}
	b.mu.Lock()
	for b.over() {
		b.cond.Wait()
	}
	b.mu.Unlock()
	return true
}

func (b *budget) charge(n int64) { b.held.Add(n) }

func (b *budget) release(n int64) {
	if n == 0 {
		return
	}
	b.held.Add(-n)
	b.mu.Lock()
	b.cond.Broadcast()
	b.mu.Unlock()
}
