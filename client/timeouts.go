package client

import (
	"context"
	"reflect"
	"sync"
	"time"
)

// coarseTimeout bounds calls by a timeout d without a runtime timer per
// call. A call gets a context that ends when its caller's does or d after
// the call begins, to within a sixteenth of d: between 15/16 of d and d.
// Calls whose context cannot end share one such context, and so do
// consecutive calls under one caller's context (a goroutine's, or a
// program's that ends on a signal); a new one is made once the last one's
// deadline is nearer than 15/16 of d, about once a sixteenth of d, and
// one no longer handed out is canceled when its last call returns.
//
// Why: a timer made and stopped for each lone op cost a wake-up of
// another thread per op (the runtime wakes its network poller when a new
// timer is the earliest), 13 µs on a 50 µs round trip on the 2-core VM.
type coarseTimeout struct {
	d  time.Duration
	mu sync.Mutex
	// Guarded by mu: the context handed out to callers whose contexts
	// cannot end, and the one handed out under the last caller's context
	// that can.
	never, last *coarseCtx
}

// coarseCtx is a context a coarseTimeout hands out: it ends at its
// deadline or when origin does (nil: origin cannot end).
type coarseCtx struct {
	context.Context
	origin context.Context
	cancel context.CancelFunc
	users  int  // guarded by coarseTimeout.mu: calls holding it
	handed bool // guarded by coarseTimeout.mu: still handed out
}

// within returns a context that ends when parent does or d from now,
// whichever is first (to within a sixteenth of d, as above), and the
// function to call once the call is done with it.
func (t *coarseTimeout) within(parent context.Context) (context.Context, context.CancelFunc) {
	now := time.Now()
	if dl, ok := parent.Deadline(); ok && !dl.After(now.Add(t.d)) {
		return parent, func() {}
	}
	origin := parent
	if cc, ours := parent.(*coarseCtx); ours {
		// It ends later than d from now or when its origin does:
		// bounding its origin by d is the same.
		origin = cc.origin
	} else if parent.Done() == nil {
		origin = nil
	} else if reflect.TypeOf(parent).Kind() != reflect.Pointer {
		// Not safely comparable with ==: a context of its own.
		return context.WithTimeout(parent, t.d)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	slot := &t.last
	if origin == nil {
		slot = &t.never
	}
	c := *slot
	if c == nil || c.origin != origin || !t.fresh(c, now) {
		if c != nil {
			c.handed = false
			if c.users == 0 {
				c.cancel()
			}
		}
		base := origin
		if base == nil {
			base = context.Background()
		}
		ctx, cancel := context.WithDeadline(base, now.Add(t.d))
		c = &coarseCtx{Context: ctx, origin: origin, cancel: cancel, handed: true}
		*slot = c
	}
	c.users++
	return c, func() { t.release(c) }
}

// fresh reports whether c's deadline is at least 15/16 of d after now.
func (t *coarseTimeout) fresh(c *coarseCtx, now time.Time) bool {
	dl, _ := c.Deadline()
	return dl.Sub(now) >= t.d-t.d/16
}

// release ends a call's hold on c, and cancels c once no call holds it
// and it is no longer handed out.
func (t *coarseTimeout) release(c *coarseCtx) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c.users--
	if c.users == 0 && !c.handed {
		c.cancel()
	}
}

// stop cancels the contexts handed out, for a client that closes.
func (t *coarseTimeout) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range []*coarseCtx{t.never, t.last} {
		if c != nil {
			c.handed = false
			c.cancel()
		}
	}
}
