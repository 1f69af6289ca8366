package chaos

import (
	"sync"
	"time"

	"github.com/batchkv/batchkv/internal/latency"
)

// timeline counts the bulk load's ops and batch latencies per second of a
// run, and keeps the run's events and fault windows.
type timeline struct {
	start time.Time
	mu    sync.Mutex
	secs  []second // guarded by mu
	evs   []Event  // guarded by mu
	wins  []Window // guarded by mu
}

type second struct {
	ops, failed, checked uint64
	lat                  latency.Histogram
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

func newTimeline(start time.Time) *timeline { return &timeline{start: start} }

func (t *timeline) since() time.Duration { return time.Since(t.start) }

// slot returns second s's counters; t.mu must be held.
func (t *timeline) slot(at time.Duration) *second {
	s := max(int(at/time.Second), 0)
	for len(t.secs) <= s {
		t.secs = append(t.secs, second{})
	}
	return &t.secs[s]
}

// batch records a bulk batch answered (or given up) at the current time.
func (t *timeline) batch(ops, failed int, took time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.slot(t.since())
	s.ops += uint64(ops)
	s.failed += uint64(failed)
	s.lat.Record(took) // failed batches too: leaving them out would flatter the tail
}

// checkedOps records ops of the checked clients answered now.
func (t *timeline) checkedOps(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.slot(t.since()).checked += uint64(n)
}

// event records what happened now and returns when.
func (t *timeline) event(what string) time.Duration {
	at := t.since()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.evs = append(t.evs, Event{At: at, What: what})
	return at
}

// window records a fault window.
func (t *timeline) window(from, to time.Duration, label string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.wins = append(t.wins, Window{From: from, To: to, Label: label})
}

// snapshot returns copies of the seconds, events and windows.
func (t *timeline) snapshot() ([]second, []Event, []Window) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]second(nil), t.secs...), append([]Event(nil), t.evs...), append([]Window(nil), t.wins...)
}

// rates returns the bulk ops per second over whole seconds in [from, to),
// as a slice, for medians.
func rates(secs []second, from, to time.Duration) []float64 {
	var out []float64
	for _, s := range whole(secs, from, to) {
		out = append(out, float64(s.ops))
	}
	return out
}

// latencies merges the batch latencies of the seconds in [from, to).
func latencies(secs []second, from, to time.Duration) *latency.Histogram {
	var h latency.Histogram
	ws := whole(secs, from, to)
	for i := range ws {
		h.Merge(&ws[i].lat)
	}
	return &h
}

// whole returns the seconds that lie wholly within [from, to).
func whole(secs []second, from, to time.Duration) []second {
	lo := int((from + time.Second - 1) / time.Second)
	hi := min(int(to/time.Second), len(secs))
	if lo >= hi {
		return nil
	}
	return secs[lo:hi]
}
