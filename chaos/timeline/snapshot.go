package timeline

import (
	"time"

	"github.com/batchkv/batchkv/internal/latency"
)

// Snapshot is a timeline's content at one instant.
type Snapshot struct {
	Seconds []Second // Seconds[i] is second i of the run
	Events  []Event
	Windows []Window
}

// FirstWindow returns the first window with label.
func (s Snapshot) FirstWindow(label string) (Window, bool) {
	for _, w := range s.Windows {
		if w.Label == label {
			return w, true
		}
	}
	return Window{}, false
}

// Rates returns the bulk ops per second over whole seconds in [from, to),
// as a slice, for medians.
func (s Snapshot) Rates(from, to time.Duration) []float64 {
	var out []float64
	for _, sec := range s.whole(from, to) {
		out = append(out, float64(sec.Ops))
	}
	return out
}

// Latencies merges the batch latencies of the whole seconds in [from, to).
func (s Snapshot) Latencies(from, to time.Duration) *latency.Histogram {
	var h latency.Histogram
	ws := s.whole(from, to)
	for i := range ws {
		h.Merge(&ws[i].Lat)
	}
	return &h
}

// whole returns the seconds that lie wholly within [from, to).
func (s Snapshot) whole(from, to time.Duration) []Second {
	lo := int((from + time.Second - 1) / time.Second)
	hi := min(int(to/time.Second), len(s.Seconds))
	if lo >= hi {
		return nil
	}
	return s.Seconds[lo:hi]
}
