// Package busypoll decides, call by call, whether a caller that waits
// for one reply polls its socket for it, spending its CPU, or sleeps
// until the reply comes, by timing calls made both ways.
//
// Polling pays where waking a sleeping thread is dear: on the 2-core VM
// where this was measured, a lone GET to Redis from a Go client took
// 56-59 µs at p50 when the client slept for its reply and 20.6 when it
// polled, with client and server on two cores; on one core, shared, the
// server needs the CPU the client would poll on, and polling was no
// quicker (docs/results.md, "Lone ops"). Against a server across a
// network, the reply comes after any sensible poll, and polling only
// burns CPU. Which holds is not known in advance, so a Policy measures
// it, and polls only while polling is clearly the quicker way.
package busypoll

import (
	"sync"
	"time"
)

const (
	// MinExploreEvery and MaxExploreEvery bound how often the way not
	// preferred is taken (every n-th call), to keep its timing current.
	// Each time it is taken and is not the quicker in that call, the
	// next comes twice as many calls later, up to MaxExploreEvery; when
	// it is, the next comes after MinExploreEvery. So the way not
	// preferred, which is the slower, costs few calls once it has
	// shown that, and a change is followed within a few of its calls.
	MinExploreEvery = 64
	MaxExploreEvery = 1024
	// weight is the share of a new call in the preferred way's mean time
	// (1/weight); an explorer's share is 1/exploreWeight.
	weight        = 8
	exploreWeight = 2
)

// Policy chooses for each call whether it polls, and learns from how
// long the calls took. Its zero value never polls; it is safe for
// concurrent use.
type Policy struct {
	max time.Duration

	mu        sync.Mutex
	mean      [2]time.Duration // by way (sleep, poll): a moving mean; 0 before its first call
	every     uint32           // calls from one explorer to the next
	untilNext uint32           // calls before the next explorer
}

// New returns a Policy whose polling calls poll for up to limit; limit <= 0
// makes one that never polls.
func New(limit time.Duration) *Policy {
	return &Policy{max: limit, every: MinExploreEvery, untilNext: MinExploreEvery}
}

// way indexes Policy.mean.
const (
	sleep = 0
	poll  = 1
)

// Choose returns how long the next call should poll: 0 (sleep at once)
// or the Policy's limit.
//
// A way not yet timed is tried first. After that the call polls if
// polling's mean time is under nine tenths of sleeping's, but for the
// explorers, which take the other way (MinExploreEvery).
func (p *Policy) Choose() time.Duration {
	if p == nil || p.max <= 0 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.mean[poll] == 0:
		return p.max
	case p.mean[sleep] == 0:
		return 0
	}
	polls := p.pollsLocked()
	if p.untilNext <= 1 {
		// An explorer. Observe sets when the next comes, from its time;
		// until then (a call that fails is not observed), as before.
		polls = !polls
		p.untilNext = p.every
	} else {
		p.untilNext--
	}
	if polls {
		return p.max
	}
	return 0
}

// pollsLocked says whether polling is the preferred way: its mean is
// under nine tenths of sleeping's.
func (p *Policy) pollsLocked() bool { return quicker(p.mean[poll], p.mean[sleep]) }

// quicker says whether polling that took polled is the quicker way
// against sleeping that took slept: by a tenth or more.
func quicker(polled, slept time.Duration) bool { return polled < slept/10*9 }

// Observe records that a call which polled for polled (Choose's answer)
// took took, from its send to its reply. A time over twice its way's
// mean counts as twice the mean, so that one stall (a collection, a
// preemption) moves the preferred way's mean by at most an eighth.
func (p *Policy) Observe(polled, took time.Duration) {
	if p == nil || took <= 0 {
		return
	}
	w := sleep
	if polled > 0 {
		w = poll
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.mean[w]
	if m == 0 {
		p.mean[w] = took
		return
	}
	took = min(took, 2*m)
	share := time.Duration(weight)
	if p.mean[sleep] != 0 && p.mean[poll] != 0 && (w == poll) != p.pollsLocked() {
		// An explorer: the next comes sooner if its way was the quicker
		// in this call, later if not.
		share = exploreWeight
		won := quicker(took, p.mean[sleep])
		if w == sleep {
			won = !quicker(p.mean[poll], took)
		}
		if won {
			p.every = MinExploreEvery
		} else {
			p.every = min(2*p.every, MaxExploreEvery)
		}
		p.untilNext = p.every
	}
	p.mean[w] = m + (took-m)/share
}

// Means returns the moving mean time of calls that slept and of calls
// that polled; 0 for a way not yet timed.
func (p *Policy) Means() (slept, polled time.Duration) {
	if p == nil {
		return 0, 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mean[sleep], p.mean[poll]
}
