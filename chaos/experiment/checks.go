package experiment

import (
	"github.com/batchkv/batchkv/chaos/timeline"
	"github.com/batchkv/batchkv/chaos/verdict"
)

// Check records a verdict criterion.
func (r *Run) Check(name, target, got string, pass bool) { r.Result.Check(name, target, got, pass) }

// Figure records a measured value without a target.
func (r *Run) Figure(name, format string, args ...any) { r.Result.Figure(name, format, args...) }

// RatioCheck checks window w's throughput against the baseline's
// (verdict.RatioCheck): its median second at least least of the
// baseline's, and no stalls.
func (r *Run) RatioCheck(name string, w timeline.Window, least float64) {
	r.Result.RatioCheck(r.Timeline.Snapshot(), name, w, least)
}

// Baseline returns the run's baseline window.
func (r *Run) Baseline() timeline.Window {
	w, _ := r.Timeline.Snapshot().FirstWindow(timeline.Baseline)
	return w
}

// BaselineRate returns the median bulk ops/s of the baseline and of every
// healthy phase between faults.
func (r *Run) BaselineRate() float64 { return verdict.BaselineRate(r.Timeline.Snapshot()) }

// Throughput returns the median bulk ops/s over w's whole seconds.
func (r *Run) Throughput(w timeline.Window) float64 {
	return verdict.Throughput(r.Timeline.Snapshot(), w)
}
