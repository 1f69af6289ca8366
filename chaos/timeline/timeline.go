// Package timeline keeps what happened when in one chaos run: the bulk
// load's ops, failures and batch latencies per second, the checked load's
// ops per second, the harness's events, and the fault windows that plots
// shade and checks measure.
package timeline

import (
	"sync"
	"time"

	"github.com/batchkv/batchkv/internal/latency"
)

// Labels of the healthy windows every check compares a fault with.
const (
	// Baseline labels the healthy load measured before the fault.
	Baseline = "baseline"
	// BaselineAgain labels a healthy phase between two faults of one
	// scenario, whose seconds count as baseline too.
	BaselineAgain = "baseline again"
)

// Timeline counts the bulk load's ops and batch latencies per second of a
// run, and keeps the run's events and fault windows. It is safe for
// concurrent use.
type Timeline struct {
	start time.Time
	mu    sync.Mutex
	secs  []Second // guarded by mu
	evs   []Event  // guarded by mu
	wins  []Window // guarded by mu
}

// Second is what one second of a run counted.
type Second struct {
	// Ops and Failed are the bulk load's ops applied and failed; Checked
	// the checked load's ops answered.
	Ops, Failed, Checked uint64
	// Lat holds the bulk load's batch latencies, failed batches included.
	Lat latency.Histogram
}

// Event is something the harness did or saw, at a time since the start.
type Event struct {
	At   time.Duration
	What string
}

// Window is a fault's span, for shading plots and windowed figures.
type Window struct {
	From, To time.Duration
	Label    string
}

// New returns a timeline whose time 0 is start.
func New(start time.Time) *Timeline { return &Timeline{start: start} }

// Since returns the time since the run's start.
func (t *Timeline) Since() time.Duration { return time.Since(t.start) }

// slot returns second s's counters; t.mu must be held.
func (t *Timeline) slot(at time.Duration) *Second {
	s := max(int(at/time.Second), 0)
	for len(t.secs) <= s {
		t.secs = append(t.secs, Second{})
	}
	return &t.secs[s]
}

// Batch records a bulk batch answered (or given up) at the current time:
// ops applied, failed, and how long the batch took.
func (t *Timeline) Batch(ops, failed int, took time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.slot(t.Since())
	s.Ops += uint64(ops)
	s.Failed += uint64(failed)
	s.Lat.Record(took) // failed batches too: leaving them out would flatter the tail
}

// CheckedOps records ops of the checked clients answered now.
func (t *Timeline) CheckedOps(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.slot(t.Since()).Checked += uint64(n)
}

// Event records what happened now and returns when.
func (t *Timeline) Event(what string) time.Duration {
	at := t.Since()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.evs = append(t.evs, Event{At: at, What: what})
	return at
}

// Window records a fault window.
func (t *Timeline) Window(from, to time.Duration, label string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.wins = append(t.wins, Window{From: from, To: to, Label: label})
}

// Snapshot returns a copy of the seconds, events and windows so far.
func (t *Timeline) Snapshot() Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	return Snapshot{Seconds: append([]Second(nil), t.secs...), Events: append([]Event(nil), t.evs...),
		Windows: append([]Window(nil), t.wins...)}
}
