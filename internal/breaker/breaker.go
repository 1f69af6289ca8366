// Package breaker is a circuit breaker for one server, as the client sees
// it:
//
//   - healthy: every call goes through. A call that fails at the transport
//     (cannot connect, connection broken) or runs past its deadline is a
//     failure; a success resets the count.
//   - unhealthy: after threshold consecutive failures the server gets no
//     calls for a cooldown; calls fail at once rather than each waiting
//     for a dial or a timeout of its own.
//   - probing (half-open): once the cooldown has passed, one call goes
//     through as a probe while the others keep failing fast. If it
//     succeeds the server is healthy again; if it fails the server stays
//     unhealthy for twice the cooldown, up to maxCooldown.
//
// The seed this replaces reset a "sick" mark on a fixed 5-minute timer; a
// probe after a short, growing cooldown brings a restarted server back in
// about a second and costs a dead one one call per cooldown.
package breaker

import (
	"fmt"
	"sync"
	"time"
)

// Breaker is the circuit breaker of one server. Its methods may be called
// concurrently.
type Breaker struct {
	threshold   int
	baseCool    time.Duration
	maxCooldown time.Duration
	now         func() time.Time

	mu        sync.Mutex
	failures  int           // consecutive; guarded by mu
	openUntil time.Time     // zero while healthy; guarded by mu
	cooldown  time.Duration // the current one; guarded by mu
	probing   bool          // a probe is in flight; guarded by mu
	lastErr   error         // the last failure; guarded by mu
}

// New returns a healthy Breaker that opens after threshold consecutive
// failures, for cooldown at first and at most maxCooldown.
func New(threshold int, cooldown, maxCooldown time.Duration) *Breaker {
	return &Breaker{threshold: threshold, baseCool: cooldown, maxCooldown: maxCooldown, cooldown: cooldown, now: time.Now}
}

// Verdict classifies a finished call.
type Verdict int

const (
	// Succeeded says the server answered (even with an error of its own).
	Succeeded Verdict = iota
	// Failed is a transport failure or a deadline: the server's fault, as
	// far as the caller can tell.
	Failed
	// Neutral says nothing about the server (the caller cancelled, a local
	// limit).
	Neutral
)

// Admit decides whether a call may go to the server: an error says why
// not and when the next probe is. probe reports that the call is the
// half-open probe; every admitted call must be reported with its verdict.
func (b *Breaker) Admit() (probe bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.openUntil.IsZero() {
		return false, nil
	}
	wait := b.openUntil.Sub(b.now())
	switch {
	case b.probing: // a probe is in flight: the next one may follow it at once
		return false, b.unhealthy(0)
	case wait > 0:
		return false, b.unhealthy(wait)
	}
	b.probing = true
	return true, nil
}

// unhealthy is the error of a call refused while unhealthy; b.mu is held.
func (b *Breaker) unhealthy(wait time.Duration) error {
	return fmt.Errorf("marked unhealthy after %d consecutive failures (last: %v); next probe in %v",
		b.failures, b.lastErr, wait.Round(time.Millisecond))
}

// Report records the verdict of an admitted call, and err, its failure.
func (b *Breaker) Report(probe bool, v Verdict, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if probe {
		b.probing = false
	}
	switch v {
	case Succeeded:
		b.failures, b.openUntil, b.cooldown, b.lastErr = 0, time.Time{}, b.baseCool, nil
	case Failed:
		b.failures++
		b.lastErr = err
		switch {
		case probe:
			b.cooldown = min(2*b.cooldown, b.maxCooldown)
			b.openUntil = b.now().Add(b.cooldown)
		case b.openUntil.IsZero() && b.failures >= b.threshold:
			b.openUntil = b.now().Add(b.cooldown)
		}
	}
}

// State is a Breaker's state at one moment.
type State struct {
	// Healthy is false while the server gets no calls but the probe.
	Healthy bool
	// Failures is the number of consecutive failed calls.
	Failures int
	// RetryIn is the time until the next probe while unhealthy.
	RetryIn time.Duration
	// LastError is the last failure, if any since the last success.
	LastError error
}

// State returns the breaker's state now.
func (b *Breaker) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := State{Healthy: b.openUntil.IsZero(), Failures: b.failures, LastError: b.lastErr}
	if !s.Healthy {
		s.RetryIn = max(0, b.openUntil.Sub(b.now()))
	}
	return s
}
