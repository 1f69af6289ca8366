package client

import (
	"fmt"
	"sync"
	"time"
)

// health is the client's view of one server, a circuit breaker:
//
//   - healthy: every call goes through. A call that fails at the transport
//     (cannot connect, connection broken) or runs past its deadline is a
//     failure; a success resets the count.
//   - unhealthy: after threshold consecutive failures the server gets no
//     calls for a cooldown; calls fail at once with ErrUnavailable rather
//     than each waiting for a dial or a timeout of its own.
//   - probing (half-open): once the cooldown has passed, one call goes
//     through as a probe while the others keep failing fast. If it
//     succeeds the server is healthy again; if it fails the server stays
//     unhealthy for twice the cooldown, up to maxCooldown.
//
// The seed this replaces reset a "sick" mark on a fixed 5-minute timer; a
// probe after a short, growing cooldown brings a restarted server back in
// about a second and costs a dead one one call per cooldown.
type health struct {
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

func newHealth(threshold int, cooldown, maxCooldown time.Duration) *health {
	return &health{threshold: threshold, baseCool: cooldown, maxCooldown: maxCooldown, cooldown: cooldown, now: time.Now}
}

// verdict classifies a finished call for health.
type verdict int

const (
	succeeded verdict = iota // the server answered (even with an error of its own)
	failed                   // transport failure or deadline: the server's fault, as far as we can tell
	neutral                  // says nothing about the server (the caller cancelled, a local limit)
)

// admit decides whether a call may go to the server. probe reports that
// the call is the half-open probe and must be reported with its verdict.
func (h *health) admit() (probe bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.openUntil.IsZero() {
		return false, nil
	}
	wait := h.openUntil.Sub(h.now())
	switch {
	case h.probing: // a probe is in flight: the next one may follow it at once
		return false, h.unhealthy(0)
	case wait > 0:
		return false, h.unhealthy(wait)
	}
	h.probing = true
	return true, nil
}

// unhealthy is the error of a call refused while unhealthy; h.mu is held.
func (h *health) unhealthy(wait time.Duration) error {
	return fmt.Errorf("marked unhealthy after %d consecutive failures (last: %v); next probe in %v",
		h.failures, h.lastErr, wait.Round(time.Millisecond))
}

// report records the verdict of an admitted call.
func (h *health) report(probe bool, v verdict, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if probe {
		h.probing = false
	}
	switch v {
	case succeeded:
		h.failures, h.openUntil, h.cooldown, h.lastErr = 0, time.Time{}, h.baseCool, nil
	case failed:
		h.failures++
		h.lastErr = err
		switch {
		case probe:
			h.cooldown = min(2*h.cooldown, h.maxCooldown)
			h.openUntil = h.now().Add(h.cooldown)
		case h.openUntil.IsZero() && h.failures >= h.threshold:
			h.openUntil = h.now().Add(h.cooldown)
		}
	}
}

// ServerHealth is the client's view of one server.
type ServerHealth struct {
	Addr string
	// Healthy is false while the server is marked unhealthy and gets no
	// calls but the probe.
	Healthy bool
	// Failures is the number of consecutive failed calls.
	Failures int
	// RetryIn is the time until the next probe while unhealthy.
	RetryIn time.Duration
	// LastError is the last failure, if any since the last success.
	LastError error
}

func (h *health) snapshot(addr string) ServerHealth {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := ServerHealth{Addr: addr, Healthy: h.openUntil.IsZero(), Failures: h.failures, LastError: h.lastErr}
	if !s.Healthy {
		s.RetryIn = max(0, h.openUntil.Sub(h.now()))
	}
	return s
}
