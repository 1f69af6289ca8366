// Package coarsetimeout bounds calls by a timeout without a runtime timer
// per call.
//
// A call gets a context that ends when its caller's does or d after the
// call begins, to within a sixteenth of d: between 15/16 of d and d.
// Calls under context.Background (or TODO) share one such context, and so
// do consecutive calls under one caller's context (a goroutine's, or a
// program's that ends on a signal); a new one is made once the last one's
// deadline is nearer than 15/16 of d, about once a sixteenth of d, and one
// no longer handed out is canceled when its last call is done (the one
// handed out last ends at its deadline). Callers
// that each bring a new context get a context (and a timer) each, as with
// context.WithTimeout, plus a mutex shared by all.
//
// Why: a timer made and stopped for each lone op cost a wake-up of
// another thread per op (the Go runtime wakes its network poller when a
// new timer is the earliest it has), 13 µs on a 50 µs round trip on a
// 2-core VM.
package coarsetimeout

import (
	"context"
	"reflect"
	"sync"
	"time"
)

// Timeout hands out contexts bounded by one timeout. Its zero value is not
// usable; make one with New. It is safe for concurrent use.
type Timeout struct {
	d  time.Duration
	mu sync.Mutex
	// Guarded by mu: the context handed out under context.Background, and
	// the one handed out under the last other caller's context.
	background, last *shared
}

// shared is a context a Timeout hands out: it ends at its deadline or
// when origin does (nil: context.Background).
type shared struct {
	context.Context
	origin context.Context
	cancel context.CancelFunc
	users  int  // guarded by Timeout.mu: calls holding it
	handed bool // guarded by Timeout.mu: still handed out
}

// New returns a Timeout of d.
func New(d time.Duration) *Timeout { return &Timeout{d: d} }

// Within returns a context that ends when parent does or d from now,
// whichever is first (to within a sixteenth of d, as above), and the
// function to call once the call is done with it; calling it again does
// nothing.
func (t *Timeout) Within(parent context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := parent.Deadline(); ok && !dl.After(time.Now().Add(t.d)) {
		return parent, func() {}
	}
	origin := parent
	switch {
	case isShared(parent):
		// It ends later than d from now or when its origin does:
		// bounding its origin by d is the same.
		origin = parent.(*shared).origin
	case parent == context.Background() || parent == context.TODO():
		origin = nil
	case reflect.TypeOf(parent).Kind() != reflect.Pointer:
		// Not safely comparable with ==: a context of its own.
		return context.WithTimeout(parent, t.d)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	slot := &t.last
	if origin == nil {
		slot = &t.background
	}
	c := *slot
	if c == nil || c.origin != origin || !t.fresh(c, now) {
		if c != nil {
			t.unhand(c)
		}
		base := origin
		if base == nil {
			base = context.Background()
		}
		ctx, cancel := context.WithDeadline(base, now.Add(t.d))
		c = &shared{Context: ctx, origin: origin, cancel: cancel, handed: true}
		*slot = c
	}
	c.users++
	released := false
	return c, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if !released {
			released = true
			c.users--
			if c.users == 0 && !c.handed {
				c.cancel()
			}
		}
	}
}

func isShared(ctx context.Context) bool {
	_, ok := ctx.(*shared)
	return ok
}

// fresh reports whether c's deadline is at least 15/16 of d after now.
func (t *Timeout) fresh(c *shared, now time.Time) bool {
	dl, _ := c.Deadline()
	return Fresh(dl, now, t.d)
}

// Fresh reports whether a deadline set for a timeout d can serve one that
// begins now: it is at least 15/16 of d away. Deadlines shared this way
// end between 15/16 of d and d after each use begins.
func Fresh(deadline, now time.Time, d time.Duration) bool {
	return deadline.Sub(now) >= d-d/16
}

// unhand stops handing c out, and cancels it if no call holds it.
func (t *Timeout) unhand(c *shared) {
	c.handed = false
	if c.users == 0 {
		c.cancel()
	}
}
