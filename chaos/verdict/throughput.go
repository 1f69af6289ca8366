package verdict

import (
	"fmt"

	"github.com/batchkv/batchkv/chaos/timeline"
	"github.com/batchkv/batchkv/internal/runlog"
)

// Thresholds of RatioCheck that this machine's noise alone does not
// cross: a second's throughput moves by a third from one second to the
// next, and a 15 s window's median by up to a fifth from one window to
// another with no fault at all.
const (
	// StallFloor is the share of the baseline's median second below which
	// a second counts as a stall.
	StallFloor = 0.5
	// MaxStallShare is the share of a fault window's seconds that may be
	// stalls.
	MaxStallShare = 0.2
)

// BaselineRate returns the median bulk ops/s over the whole seconds of
// the baseline and of every healthy phase between faults.
func BaselineRate(s timeline.Snapshot) float64 {
	var all []float64
	for _, w := range s.Windows {
		if w.Label == timeline.Baseline || w.Label == timeline.BaselineAgain {
			all = append(all, s.Rates(w.From, w.To)...)
		}
	}
	return runlog.Median(all)
}

// Throughput returns the median bulk ops/s over w's whole seconds.
func Throughput(s timeline.Snapshot, w timeline.Window) float64 {
	return runlog.Median(s.Rates(w.From, w.To))
}

// RatioCheck checks a fault window's throughput against the baseline's in
// two ways: the window's median second is at least least of the
// baseline's median second, and at most MaxStallShare of its seconds fall
// below StallFloor of it (no stalls).
func (r *Result) RatioCheck(s timeline.Snapshot, name string, w timeline.Window, least float64) {
	b := BaselineRate(s)
	fs := s.Rates(w.From, w.To)
	f := runlog.Median(fs)
	ratio := 0.0
	if b > 0 {
		ratio = f / b
	}
	r.Check(name+": median second", "≥ "+Pct(least)+" of the baseline's", fmt.Sprintf("%s (%.0f vs %.0f ops/s)", Pct(ratio), f, b), ratio >= least)
	stalls := 0
	for _, x := range fs {
		if x < StallFloor*b {
			stalls++
		}
	}
	share := 0.0
	if len(fs) > 0 {
		share = float64(stalls) / float64(len(fs))
	}
	r.Check(name+": seconds under "+Pct(StallFloor)+" of the baseline's median", "≤ "+Pct(MaxStallShare)+" of them",
		fmt.Sprintf("%d of %d", stalls, len(fs)), len(fs) > 0 && share <= MaxStallShare)
}
