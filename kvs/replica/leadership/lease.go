package leadership

import (
	"sync"
	"sync/atomic"
	"time"
)

// Lease reads (replica.Config.LeaseReads): a leader whose entry of its term,
// appended at t0 by its clock, has committed knows that a majority heard
// from it at or after t0. None of them helps elect another leader until it
// has not heard from this one for a while:
//
//   - Raft's own timers: a follower calls an election, and stops
//     refusing votes for another candidate, only after a heartbeat timeout
//     (800 ms) without its leader;
//   - the silence check (silentleader.go): only once a majority of followers
//     report a heartbeat timeout less SilenceSlack (640 ms) of silence, so
//     at least one of them heard from this leader at or after t0;
//   - the crash check (deadleader.go) calls an election at once when the
//     leader's port refuses connections, which a live leader behind a
//     firewall that rejects could do: it is off in Lease mode, and a
//     crashed leader is replaced by the silence check instead (after about
//     700 ms rather than 200 ms);
//   - a hand-back (handbackwatch.go) is this leader's own doing: it gives up
//     its Lease before it starts one.
//
// So until t0 + LeaseRead no other leader can have been elected, provided
// LeaseRead, stretched by the worst difference between the servers'
// clock rates, stays under 640 ms. replica.Open requires LeaseRead × 1.5 ≤ the
// silence threshold: clocks may run up to 50% apart. Within the Lease the
// leader serves reads from its store with no log entry: every write
// acknowledged before a read began is in it, since no other leader could
// have acknowledged one.
//
// A Lease is safe for concurrent use; its zero value is off.
type Lease struct {
	on  bool
	dur time.Duration
	// base is the origin of until: readings of the monotonic clock.
	base time.Time

	mu      sync.Mutex    // orders renewals with give-up
	until   atomic.Int64  // nanoseconds since base at which the lease ends
	term    atomic.Uint64 // the term the lease was granted in
	stopped atomic.Bool   // given up for a leadership transfer
}

// NewLease returns a lease that lasts d after each renewal; off, it is
// never valid and renewals do nothing.
func NewLease(on bool, d time.Duration) *Lease {
	return &Lease{on: on, dur: d, base: time.Now()}
}

// On reports whether lease reads are on.
func (l *Lease) On() bool { return l.on }

// Now is the monotonic time since base.
func (l *Lease) Now() int64 { return int64(time.Since(l.base)) }

// Renew extends the lease to start + dur after an entry appended no
// earlier than start (a reading of Now) committed in term.
func (l *Lease) Renew(start int64, term uint64) {
	if !l.on {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped.Load() {
		return
	}
	if l.term.Load() != term {
		l.term.Store(term)
		l.until.Store(0)
	}
	if end := start + int64(l.dur); end > l.until.Load() {
		l.until.Store(end)
	}
}

// GiveUp ends the lease and refuses renewals until Resume.
func (l *Lease) GiveUp() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped.Store(true)
	l.until.Store(0)
}

// Resume accepts renewals again.
func (l *Lease) Resume() { l.stopped.Store(false) }

// Valid reports whether the lease holds now in term.
func (l *Lease) Valid(term uint64) bool {
	return !l.stopped.Load() && l.term.Load() == term && l.Now() < l.until.Load()
}
