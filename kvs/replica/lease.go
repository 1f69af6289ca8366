package replica

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Lease reads (Config.LeaseReads): a leader whose entry of its term,
// appended at t0 by its clock, has committed knows that a majority heard
// from it at or after t0. None of them helps elect another leader until it
// has not heard from this one for a while:
//
//   - Raft's own timers: a follower calls an election, and stops
//     refusing votes for another candidate, only after a heartbeat timeout
//     (800 ms) without its leader;
//   - the silence check (silence.go): only once a majority of followers
//     report a heartbeat timeout less SilenceSlack (640 ms) of silence, so
//     at least one of them heard from this leader at or after t0;
//   - the crash check (failover.go) calls an election at once when the
//     leader's port refuses connections, which a live leader behind a
//     firewall that rejects could do: it is off in lease mode, and a
//     crashed leader is replaced by the silence check instead (after about
//     700 ms rather than 200 ms);
//   - a hand-back (handback.go) is this leader's own doing: it gives up
//     its lease before it starts one.
//
// So until t0 + LeaseRead no other leader can have been elected, provided
// LeaseRead, stretched by the worst difference between the servers'
// clock rates, stays under 640 ms. Open requires LeaseRead × 1.5 ≤ the
// silence threshold: clocks may run up to 50% apart. Within the lease the
// leader serves reads from its store with no log entry: every write
// acknowledged before a read began is in it, since no other leader could
// have acknowledged one.
type lease struct {
	on  bool
	dur time.Duration
	// base is the origin of until: readings of the monotonic clock.
	base time.Time

	mu      sync.Mutex    // orders renewals with give-up
	until   atomic.Int64  // nanoseconds since base at which the lease ends
	term    atomic.Uint64 // the term the lease was granted in
	stopped atomic.Bool   // given up for a leadership transfer
}

// leaseWindowFactor is how much the lease is stretched, at most, by
// clocks that run at different rates: Open checks that
// LeaseRead × leaseWindowFactor fits under the silence threshold.
const leaseWindowFactor = 1.5

// checkLease returns an error if t's lease is too long to be safe.
func checkLease(t Timing) error {
	silence := t.HeartbeatTimeout - t.Failover.WithDefaults().SilenceSlack
	if t.LeaseRead <= 0 || time.Duration(float64(t.LeaseRead)*leaseWindowFactor) > silence {
		return fmt.Errorf("replica: lease %v: want it above 0 and at most %v (the %v of silence after which followers elect, divided by %v for clock-rate differences)",
			t.LeaseRead, time.Duration(float64(silence)/leaseWindowFactor), silence, leaseWindowFactor)
	}
	return nil
}

// now is the monotonic time since base.
func (l *lease) now() int64 { return int64(time.Since(l.base)) }

// renew extends the lease to start + dur after an entry appended no
// earlier than start (a reading of now) committed in term.
func (l *lease) renew(start int64, term uint64) {
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

// giveUp ends the lease and refuses renewals until resume.
func (l *lease) giveUp() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped.Store(true)
	l.until.Store(0)
}

// resume accepts renewals again.
func (l *lease) resume() { l.stopped.Store(false) }

// valid reports whether the lease holds now in term.
func (l *lease) valid(term uint64) bool {
	return !l.stopped.Load() && l.term.Load() == term && l.now() < l.until.Load()
}

// ReadLease reports whether this replica may serve a read from its store
// now without a log entry: lease reads are on, it leads, it has applied
// every entry of earlier terms, and its lease holds. Otherwise the read
// needs ReadBarrier.
func (g *Group) ReadLease() bool {
	if !g.lease.on {
		return false
	}
	term := g.raft.CurrentTerm()
	return g.raft.State() == raft.Leader && g.readyTerm.Load() == term && g.lease.valid(term)
}
