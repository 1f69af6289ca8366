package backend

import (
	"sync"
	"sync/atomic"
	"time"
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
//     is cut off after Limits.WriteTimeout, and sooner, after
//     Limits.StallTimeout, while the server is over its budget: else a
//     few peers that each hold one large reply, which always proceeds,
//     would keep every other batch with gets waiting until then).
//
// The simpler alternative, reserving the largest possible reply before a
// batch runs, would make every 8192-get batch reserve 63 MiB and serialize
// the standard run; charging what was actually read costs nothing there.

// Budget counts bytes held and lets callers wait while it is over a limit.
type Budget struct {
	limit  int64
	held   atomic.Int64
	since  atomic.Int64 // unix nanoseconds at which held last rose from 0
	closed atomic.Bool  // Close was called: no caller waits any more

	mu   sync.Mutex
	cond *sync.Cond // signalled when held goes down

	wentOver chan struct{} // a token when a Charge takes held to the limit
}

// NewBudget returns an empty budget of limit bytes.
func NewBudget(limit int64) *Budget {
	b := &Budget{limit: limit, wentOver: make(chan struct{}, 1)}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// WentOver returns a channel that holds a token once a Charge has taken
// the bytes held from under the limit to it or past it, until it is
// received: a watcher that needs to act only while the budget is over
// can sleep long otherwise, and be woken. It holds one token at most, so
// it serves one receiver.
func (b *Budget) WentOver() <-chan struct{} { return b.wentOver }

// over reports whether something is held and the limit is reached, and
// the budget is not closed.
func (b *Budget) over() bool {
	h := b.held.Load()
	return h > 0 && h >= b.limit && !b.closed.Load()
}

// Wait blocks while the budget is over its limit; it returns whether it
// had to wait.
func (b *Budget) Wait() bool {
	if !b.over() {
		return false
	}
	b.waitWhile(b.over)
	return true
}

// waitWhile blocks while blocked() holds, checked again each time held
// goes down or Close is called.
func (b *Budget) waitWhile(blocked func() bool) {
	b.mu.Lock()
	for blocked() {
		b.cond.Wait()
	}
	b.mu.Unlock()
}

// Held returns the bytes held.
func (b *Budget) Held() int64 { return b.held.Load() }

// Over reports whether something is held and the limit is reached.
func (b *Budget) Over() bool { return b.over() }

// HeldSince returns the bytes held and, when that is not 0, since when
// something has been held without a break.
func (b *Budget) HeldSince() (int64, time.Time) {
	h := b.held.Load()
	if h == 0 {
		return 0, time.Time{}
	}
	return h, time.Unix(0, b.since.Load())
}

// Call is one request whose reply holds values until it is written: the
// bytes it holds charged, to its connection's budget and the server's.
type Call struct {
	Conn    *Budget // its connection's reply budget
	charged int64   // set by the request's goroutine, read after it returns
}

// Close wakes every caller waiting on b, and lets every later one through:
// the connection or server it bounds is going away, and what waits on it
// must be able to end.
func (b *Budget) Close() {
	b.closed.Store(true)
	b.mu.Lock()
	b.cond.Broadcast()
	b.mu.Unlock()
}

// awaitClose blocks until Close.
func (b *Budget) awaitClose() { b.waitWhile(func() bool { return !b.closed.Load() }) }

// Charge counts n more bytes held, until Release.
func (b *Budget) Charge(n int64) {
	if n <= 0 {
		return
	}
	h := b.held.Add(n)
	if h == n {
		b.since.Store(time.Now().UnixNano())
	}
	if h >= b.limit && h-n < b.limit {
		select {
		case b.wentOver <- struct{}{}:
		default: // a token is already waiting
		}
	}
}

// Release gives back n bytes that Charge counted.
func (b *Budget) Release(n int64) {
	if n == 0 {
		return
	}
	b.held.Add(-n)
	b.mu.Lock()
	b.cond.Broadcast()
	b.mu.Unlock()
}
