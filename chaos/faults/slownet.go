package faults

import (
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/batchkv/batchkv/chaos/experiment"
	"github.com/batchkv/batchkv/chaos/monitor"
	"github.com/batchkv/batchkv/chaos/timeline"
	"github.com/batchkv/batchkv/chaos/verdict"
	"github.com/batchkv/batchkv/internal/latency"
)

// The slow-network verdict's targets. A slow link may cost only what its
// delay must: a closed load keeps ClosedFloor of what its concurrency
// allows at that delay, a batch is late by no more than the added round
// trip plus LatencyMargin, and an open load at OpenShare of the baseline
// (or of what the load can carry at the longest delay: openRate) is
// served in full (OpenServed), its p99 late by no more than the added
// round trip plus LatencyMargin.
const (
	ClosedFloor   = 0.85
	LatencyMargin = 50 * time.Millisecond
	OpenShare     = 0.5
	OpenServed    = 0.97
	// OpenHeld is the largest share of the entries of an open-load step
	// that the leader's commit gate may hold for a window: holding pays
	// only against a queue, which a load at half the baseline does not
	// build, and a window is time added to every entry it holds.
	OpenHeld = 0.10
)

// Labels of the open load's windows.
const (
	openBaseline = "open baseline"
	openPrefix   = "open "
)

// openSettle is how long a change of load or delay is left to settle
// before an open-load window starts, so that the batches sent before it
// finish (at most half the phase, for short test runs, whose phases
// still measure 2 s).
const openSettle = 2 * time.Second

// slowLink is a slow-network scenario: delay on every Raft link of shard
// 0's leader, both ways or on what it sends only (the seed's netem delay
// on the leader's egress).
type slowLink struct{ egressOnly bool }

// set adds d to the links of node; 0 removes it.
func (s slowLink) set(r *experiment.Run, node int, d time.Duration) error {
	if s.egressOnly {
		return r.Procs.Links.SetEgressLatency(node, d)
	}
	return r.Procs.Links.SetLatency(node, d)
}

// rtt is what delay lat adds to a round trip between the leader and a
// follower.
func (s slowLink) rtt(lat time.Duration) time.Duration {
	if s.egressOnly {
		return lat
	}
	return 2 * lat
}

// where says which of the leader's bytes are late.
func (s slowLink) where() string {
	if s.egressOnly {
		return "what it sends only"
	}
	return "both ways"
}

// openRate is the open load's rate: OpenShare of the baseline's, or of
// what the load's ops in flight can carry at the largest added round trip
// (those ops over the baseline's batch p50 plus that trip), whichever is
// lower. A rate the load generator cannot carry would measure the
// generator, not the store: 16 goroutines of 256-op batches carry 8,000
// ops/s at +250 ms, not half of a 400,000 ops/s baseline.
func openRate(baseline float64, inFlight int, p50, rtt time.Duration) float64 {
	return OpenShare * min(baseline, float64(inFlight)/(p50+rtt).Seconds())
}

// slowStep is one delay's window under one load.
type slowStep struct {
	lat time.Duration
	w   timeline.Window
}

// inject adds each of Opt.Latencies in turn to the leader's links under
// the closed bulk load, with a healthy phase between (during the last
// step a follower is stopped for Opt.Lag and must catch up); then turns
// the load into an open one at openRate (OpenShare of the baseline's
// rate, or less where the load cannot carry that at the longest delay) and adds
// each latency again, for half a step each.
func (s slowLink) inject(r *experiment.Run) (func(), error) {
	l := r.LeaderNow(0)
	f := r.Follower(l)
	var closed, open []slowStep
	var stoppedAt, contAt time.Duration
	var restoresBefore uint64
	for i, lat := range r.Opt.Latencies {
		from := r.Timeline.Event(fmt.Sprintf("+%v on every Raft link of server %d (leader), %s", lat, l, s.where()))
		if err := s.set(r, l, lat); err != nil {
			return nil, err
		}
		if i == len(r.Opt.Latencies)-1 && r.Opt.Lag > 0 {
			lead := min(5*time.Second, r.Opt.Fault/4)
			time.Sleep(lead)
			restoresBefore = monitor.RestoresOf(r.Monitor.Samples(), 0, f, 0, r.Timeline.Since())
			stoppedAt = r.Timeline.Event(fmt.Sprintf("SIGSTOP server %d (follower) to make it lag", f))
			if err := r.Procs.Signal(f, syscall.SIGSTOP); err != nil {
				return nil, err
			}
			time.Sleep(r.Opt.Lag)
			if err := r.Procs.Signal(f, syscall.SIGCONT); err != nil {
				return nil, err
			}
			contAt = r.Timeline.Event(fmt.Sprintf("SIGCONT server %d", f))
			time.Sleep(max(r.Opt.Fault-lead-r.Opt.Lag, 0))
		} else {
			time.Sleep(r.Opt.Fault)
		}
		if err := s.set(r, l, 0); err != nil {
			return nil, err
		}
		w := timeline.Window{From: from, To: r.Timeline.Event("latency removed"), Label: fmt.Sprintf("+%v", lat)}
		r.Timeline.Window(w.From, w.To, w.Label)
		closed = append(closed, slowStep{lat, w})
		// A healthy phase after every step, which counts as baseline too:
		// the checks then compare each step with healthy seconds on both
		// sides of it, so that the machine's own drift during the run does
		// not pass for the fault's effect.
		again := r.Timeline.Since()
		time.Sleep(r.Opt.Baseline)
		r.Timeline.Window(again, r.Timeline.Since(), timeline.BaselineAgain)
	}

	snap := r.Timeline.Snapshot()
	p50b := latencies(snap, windowsLabelled(snap, timeline.Baseline, timeline.BaselineAgain)).Quantile(0.5)
	offered := openRate(r.BaselineRate(), r.Opt.Bulk.Goroutines*r.Opt.Bulk.Batch, p50b, s.rtt(slices.Max(r.Opt.Latencies)))
	r.Bulk.Pace(offered)
	r.Timeline.Event(fmt.Sprintf("open load: a batch due every %v (%.0f ops/s)",
		time.Duration(float64(r.Opt.Bulk.Batch)/offered*float64(time.Second)).Round(time.Microsecond), offered))
	openPhase := func(label string, d time.Duration) timeline.Window {
		settle := min(openSettle, d/2)
		time.Sleep(settle)
		from := r.Timeline.Since()
		time.Sleep(max(d-settle, 2*time.Second))
		w := timeline.Window{From: from, To: r.Timeline.Since(), Label: label}
		r.Timeline.Window(w.From, w.To, w.Label)
		return w
	}
	half := r.Opt.Fault / 2
	openPhase(openBaseline, half)
	for _, lat := range r.Opt.Latencies {
		r.Timeline.Event(fmt.Sprintf("open load: +%v on every Raft link of server %d (leader), %s", lat, l, s.where()))
		if err := s.set(r, l, lat); err != nil {
			return nil, err
		}
		w := openPhase(fmt.Sprintf("%s+%v", openPrefix, lat), half)
		if err := s.set(r, l, 0); err != nil {
			return nil, err
		}
		r.Timeline.Event("latency removed")
		open = append(open, slowStep{lat, w})
		openPhase(openBaseline, half)
	}
	behind := r.Bulk.Pace(0)
	r.Timeline.Event("closed load again")

	return func() {
		snap := r.Timeline.Snapshot()
		vs := monitor.Views(r.Monitor.Samples(), 0)
		closedBase, openBase := windowsLabelled(snap, timeline.Baseline, timeline.BaselineAgain), windowsLabelled(snap, openBaseline)
		for _, st := range closed {
			tc := monitor.TermChanges(vs, st.w.From, st.w.To)
			r.Check(fmt.Sprintf("elections with %s", st.w.Label), "0", fmt.Sprint(tc), tc == 0)
			s.checkClosed(r, snap, closedBase, st)
		}
		for _, st := range closed {
			e, h := gateCounts(r, l, st.w)
			r.Figure(fmt.Sprintf("closed load, %s: entries the leader's commit gate held", st.w.Label), "%d of %d", h, e)
		}
		for _, st := range open {
			s.checkOpen(r, snap, openBase, st, offered)
			e, h := gateCounts(r, l, st.w)
			r.Check(fmt.Sprintf("open load, %s: entries the leader's commit gate held", st.w.Label),
				fmt.Sprintf("≤ %s (a light load meets no queue to save)", verdict.Pct(OpenHeld)),
				fmt.Sprintf("%d of %d", h, e), float64(h) <= OpenHeld*float64(e))
		}
		r.Figure("open load: batches that fell due with the backlog full (never sent)", "%d", behind)
		if stoppedAt == 0 {
			return
		}
		ss := r.Monitor.Samples()
		d, ok := monitor.CaughtUp(ss, vs, 0, f, contAt)
		got := verdict.OrNever(d, ok)
		r.Check(fmt.Sprintf("follower %d, stopped %v, is current again after SIGCONT", f, r.Opt.Lag), "catches up", got, ok)
		after := monitor.RestoresOf(ss, 0, f, contAt, r.Timeline.Since())
		r.Figure("lagging follower caught up through a snapshot", "%v (snapshots restored: %d)", after > restoresBefore, after-restoresBefore)
	}, nil
}

// checkClosed checks one step under the closed load. The load keeps
// Goroutines x Batch ops in flight, so at a delay that adds rtt to a
// round trip it can do no better than those ops over the baseline's batch
// latency plus rtt: the step's median second must reach ClosedFloor of
// that, or of the baseline where the baseline is lower (a machine whose
// CPU was the limit hides the delay behind its queue). And a batch may be
// late by the added round trip and LatencyMargin, no more: the store adds
// no round trips of its own.
func (s slowLink) checkClosed(r *experiment.Run, snap timeline.Snapshot, base []timeline.Window, st slowStep) {
	rtt := s.rtt(st.lat)
	p50b := latencies(snap, base).Quantile(0.5)
	inFlight := r.Opt.Bulk.Goroutines * r.Opt.Bulk.Batch
	bound := float64(inFlight) / (p50b + rtt).Seconds()
	b := r.BaselineRate()
	want := min(b, bound)
	got := r.Throughput(st.w)
	r.Check(fmt.Sprintf("closed load, %s: median second", st.w.Label),
		fmt.Sprintf("≥ %s of min(baseline, ops in flight / (baseline p50 + added round trip))", verdict.Pct(ClosedFloor)),
		fmt.Sprintf("%s (%.0f ops/s; baseline %.0f, bound %.0f = %d / (%s + %s))", verdict.Pct(got/max(want, 1)), got, b, bound,
			inFlight, verdict.Millis(p50b), verdict.Millis(rtt)), got >= ClosedFloor*want)
	p50 := snap.Latencies(st.w.From, st.w.To).Quantile(0.5)
	r.Check(fmt.Sprintf("closed load, %s: batch latency p50 added", st.w.Label),
		fmt.Sprintf("≤ added round trip + %s (%s)", verdict.Millis(LatencyMargin), verdict.Millis(rtt+LatencyMargin)),
		fmt.Sprintf("%s (%s vs %s)", verdict.Millis(p50-p50b), verdict.Millis(p50), verdict.Millis(p50b)), p50-p50b <= rtt+LatencyMargin)
}

// checkOpen checks one step under the open load of offered ops/s: every
// batch that fell due was served (OpenServed of the offered ops a second,
// to allow for batches still in flight at the window's edges), and the
// p99 batch latency, counted from when a batch fell due, is at most the
// open baseline's plus the added round trip plus LatencyMargin.
func (s slowLink) checkOpen(r *experiment.Run, snap timeline.Snapshot, base []timeline.Window, st slowStep, offered float64) {
	rtt := s.rtt(st.lat)
	rates := snap.Rates(st.w.From, st.w.To)
	var served float64
	for _, x := range rates {
		served += x
	}
	served /= float64(max(len(rates), 1))
	r.Check(fmt.Sprintf("open load, %s: ops served", st.w.Label), fmt.Sprintf("≥ %s of the %.0f ops/s offered", verdict.Pct(OpenServed), offered),
		fmt.Sprintf("%s (%.0f ops/s, mean of %d seconds)", verdict.Pct(served/max(offered, 1)), served, len(rates)), served >= OpenServed*offered)
	// Both p99s are read off histograms, within a bucket (about 6%): the
	// step's fails only if the low end of its bucket is over the bound.
	p99b := latencies(snap, base).Quantile(0.99)
	p99lo, p99 := snap.Latencies(st.w.From, st.w.To).QuantileRange(0.99)
	r.Check(fmt.Sprintf("open load, %s: batch latency p99", st.w.Label),
		fmt.Sprintf("≤ open baseline's + added round trip + %s (%s), within a histogram bucket", verdict.Millis(LatencyMargin), verdict.Millis(p99b+rtt+LatencyMargin)),
		fmt.Sprintf("%s-%s (open baseline %s)", verdict.Millis(p99lo), verdict.Millis(p99), verdict.Millis(p99b)), p99lo <= p99b+rtt+LatencyMargin)
	p50b, p50 := latencies(snap, base).Quantile(0.5), snap.Latencies(st.w.From, st.w.To).Quantile(0.5)
	r.Figure(fmt.Sprintf("open load, %s: batch latency p50 added (added round trip %s)", st.w.Label, verdict.Millis(rtt)),
		"%s (%s vs %s)", verdict.Millis(p50-p50b), verdict.Millis(p50), verdict.Millis(p50b))
}

// gateCounts returns how many entries the commit gate of server l, shard
// 0's leader, let go during w, and how many of them it held.
func gateCounts(r *experiment.Run, l int, w timeline.Window) (entries, held uint64) {
	ss := r.Monitor.Samples()
	e0, h0 := monitor.GateCounts(ss, 0, l, w.From)
	e1, h1 := monitor.GateCounts(ss, 0, l, w.To)
	return e1 - e0, h1 - h0
}

// windowsLabelled returns the windows of snap with any of labels.
func windowsLabelled(snap timeline.Snapshot, labels ...string) []timeline.Window {
	var out []timeline.Window
	for _, w := range snap.Windows {
		for _, l := range labels {
			if w.Label == l {
				out = append(out, w)
			}
		}
	}
	return out
}

// latencies merges the batch latencies of ws.
func latencies(snap timeline.Snapshot, ws []timeline.Window) *latency.Histogram {
	var h latency.Histogram
	for _, w := range ws {
		h.Merge(snap.Latencies(w.From, w.To))
	}
	return &h
}
