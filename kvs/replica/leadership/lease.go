package leadership

import (
	"fmt"
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
//   - a hand-back (handbackwatch.go), or another leadership transfer, is
//     this leader's own doing: it gives up its Lease before it starts one,
//     and renews it afterwards only with entries appended once the
//     target's hasty election round is over (Resume);
//   - any other TimeoutNow, which makes a replica stand at once, is refused
//     while the replica still hears from a leader (leasestand.go).
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
	// quarantine is how long after a Resume the entries appended do not
	// renew the lease: the round of the hasty election a transfer may
	// have started.
	quarantine time.Duration
	// base is the origin of until: readings of the monotonic clock.
	base time.Time

	mu      sync.Mutex    // orders renewals with give-up
	until   atomic.Int64  // nanoseconds since base at which the lease ends
	term    atomic.Uint64 // the term the lease was granted in
	stopped atomic.Bool   // given up for a leadership transfer
	fence   atomic.Int64  // entries appended before it (a reading of Now) renew nothing
}

// leaseWindowFactor is how much the lease is stretched, at most, by
// clocks that run at different rates: CheckLease checks that the lease ×
// leaseWindowFactor fits under the silence threshold.
const leaseWindowFactor = 1.5

// CheckLease returns an error if a lease of d is too long to be safe
// beside silence, the silence after which followers elect.
func CheckLease(d, silence time.Duration) error {
	if d <= 0 || time.Duration(float64(d)*leaseWindowFactor) > silence {
		return fmt.Errorf("replica: lease %v: want it above 0 and at most %v (the %v of silence after which followers elect, divided by %v for clock-rate differences)",
			d, time.Duration(float64(silence)/leaseWindowFactor), silence, leaseWindowFactor)
	}
	return nil
}

// NewLease returns a lease that lasts d after each renewal; off, it is
// never valid and renewals do nothing. After a leadership transfer the
// lease is renewed only by entries appended quarantine after it (Resume;
// TransferQuarantine).
func NewLease(on bool, d, quarantine time.Duration) *Lease {
	return &Lease{on: on, dur: d, quarantine: quarantine, base: time.Now()}
}

// TransferQuarantine is how long after a leadership transfer its target
// may still be elected at once: its TimeoutNow may arrive as late as the
// RPC's deadline (rpcTimeout), and its election round then lasts up to
// twice Raft's election timeout.
func TransferQuarantine(electionTimeout, rpcTimeout time.Duration) time.Duration {
	return rpcTimeout + 2*electionTimeout
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
	if l.stopped.Load() || start < l.fence.Load() {
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

// Resume accepts renewals again, after a leadership transfer, but only
// by entries appended from the end of the quarantine on. The transfer may
// make its target stand even when it reported failure (its TimeoutNow
// can arrive late, up to its RPC's deadline), and for one election round,
// at most twice the election timeout, the target's vote requests carry
// the transfer flag, which voters grant at once however recently they
// heard from this leader: a majority could elect it while another
// majority acknowledged this leader's new entries. After that round a
// candidate needs voters that have heard from no leader for a heartbeat
// timeout. (A TimeoutNow that the network holds past its RPC's deadline
// and delivers later is not covered.) Until the quarantine ends, reads
// take a barrier, which renews nothing either.
func (l *Lease) Resume() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fence.Store(l.Now() + int64(l.quarantine))
	l.stopped.Store(false)
}

// Valid reports whether the lease holds now in term.
func (l *Lease) Valid(term uint64) bool {
	return !l.stopped.Load() && l.term.Load() == term && l.Now() < l.until.Load()
}
