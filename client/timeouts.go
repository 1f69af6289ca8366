package client

import (
	"context"
	"sync"
	"time"
)

// coarseTimeout bounds calls by a timeout d without a runtime timer per
// call. Calls whose context cannot end by itself share one context, which
// ends at most d and at least 15/16 of d after each call begins; a new one
// is made once the last is nearer than that, about once a sixteenth of d.
//
// Why: a timer made and stopped for each lone op cost a wake-up of
// another thread per op (the runtime wakes its network poller when a new
// timer is the earliest), 13 µs on a 50 µs round trip on the 2-core VM.
type coarseTimeout struct {
	d      time.Duration
	mu     sync.Mutex
	cur    coarseCtx          // guarded by mu
	end    time.Time          // guarded by mu: cur's deadline
	cancel context.CancelFunc // guarded by mu: cur's, called only by stop
}

// coarseCtx is a context a coarseTimeout handed out: it ends only at its
// deadline.
type coarseCtx struct{ context.Context }

// within returns a context that ends when parent does or d from now,
// whichever is first (within the 1/16 of d above), and its cancel.
func (t *coarseTimeout) within(parent context.Context) (context.Context, context.CancelFunc) {
	now := time.Now()
	if dl, ok := parent.Deadline(); ok && !dl.After(now.Add(t.d)) {
		return parent, func() {}
	}
	_, ours := parent.(coarseCtx)
	if parent.Done() != nil && !ours {
		return context.WithTimeout(parent, t.d)
	}
	// parent ends never, or (one of ours) only at its deadline, which is
	// later than the shared context's.
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur.Context == nil || t.end.Sub(now) < t.d-t.d/16 {
		t.end = now.Add(t.d)
		// The one before is left to its timer: calls may still hold it.
		var ctx context.Context
		ctx, t.cancel = context.WithDeadline(context.Background(), t.end)
		t.cur = coarseCtx{ctx}
	}
	return t.cur, func() {}
}

// stop ends the shared context, for a client that closes.
func (t *coarseTimeout) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cancel != nil {
		t.cancel()
	}
}
