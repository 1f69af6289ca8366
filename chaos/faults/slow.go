package faults

import (
	"fmt"
	"syscall"
	"time"

	"github.com/batchkv/batchkv/chaos/experiment"
	"github.com/batchkv/batchkv/chaos/monitor"
	"github.com/batchkv/batchkv/chaos/timeline"
	"github.com/batchkv/batchkv/chaos/verdict"
)

// SlowLinkFloor is the least median second, against the baseline's, with
// 250 ms or more added to the leader's links.
const SlowLinkFloor = 0.60

// slowFollower limits a follower of shard 0 to Opt.CPUFraction of a CPU
// for the fault's length: no election, throughput and tail latency near
// the baseline's.
func slowFollower(r *experiment.Run) (func(), error) {
	l, err := r.MustLeader()
	if err != nil {
		return nil, err
	}
	f := r.Follower(l)
	pid := r.Procs.Pid(f)
	if err := r.CPU.Limit(pid, r.Opt.CPUFraction); err != nil {
		return nil, err
	}
	from := r.Timeline.Event(fmt.Sprintf("server %d (follower) limited to %s of a CPU", f, verdict.Pct(r.Opt.CPUFraction)))
	time.Sleep(r.Opt.Fault)
	err = r.CPU.Unlimit(pid)
	to := r.Timeline.Event("CPU limit lifted")
	w := timeline.Window{From: from, To: to, Label: "slow follower"}
	r.Timeline.Window(w.From, w.To, w.Label)
	return func() {
		base := r.Baseline()
		vs := monitor.Views(r.Monitor.Samples(), 0)
		tc, lc := monitor.TermChanges(vs, base.From, r.Timeline.Since()), monitor.LeaderChanges(vs, base.From, r.Timeline.Since())
		r.Check("term changes from the baseline on", "0", fmt.Sprint(tc), tc == 0)
		r.Check("leader changes from the baseline on", "0", fmt.Sprint(lc), lc == 0)
		r.RatioCheck("throughput while the follower is slow", w, 0.75)
		snap := r.Timeline.Snapshot()
		pb, pf := snap.Latencies(base.From, base.To).Quantile(0.9999), snap.Latencies(w.From, w.To).Quantile(0.9999)
		r.Check("p99.99 batch latency while the follower is slow", "≤ 2x baseline",
			fmt.Sprintf("%.2fx (%s vs %s)", float64(pf)/float64(max(pb, 1)), verdict.Millis(pf), verdict.Millis(pb)), pf <= 2*pb)
	}, err
}

// slowNetwork adds each of Opt.Latencies in turn to every Raft link of
// shard 0's leader, with a healthy phase between; during the last, a
// follower is stopped for Opt.Lag and must catch up.
func slowNetwork(r *experiment.Run) (func(), error) {
	l := r.LeaderNow(0)
	f := r.Follower(l)
	var wins []timeline.Window
	var stoppedAt, contAt time.Duration
	var restoresBefore uint64
	for i, lat := range r.Opt.Latencies {
		from := r.Timeline.Event(fmt.Sprintf("+%v on every Raft link of server %d (leader), both ways", lat, l))
		if err := r.Procs.Links.SetLatency(l, lat); err != nil {
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
		if err := r.Procs.Links.SetLatency(l, 0); err != nil {
			return nil, err
		}
		w := timeline.Window{From: from, To: r.Timeline.Event("latency removed"), Label: fmt.Sprintf("+%v", lat)}
		r.Timeline.Window(w.From, w.To, w.Label)
		wins = append(wins, w)
		if i < len(r.Opt.Latencies)-1 {
			// A healthy phase between the steps, which counts as baseline
			// too: the checks then compare each step with healthy seconds
			// on both sides of it, so that the machine's own drift during
			// the run does not pass for the fault's effect.
			again := r.Timeline.Since()
			time.Sleep(r.Opt.Baseline)
			r.Timeline.Window(again, r.Timeline.Since(), timeline.BaselineAgain)
		}
	}
	return func() {
		ss := r.Monitor.Samples()
		vs := monitor.Views(ss, 0)
		for i, w := range wins {
			tc := monitor.TermChanges(vs, w.From, w.To)
			r.Check(fmt.Sprintf("elections with %s", w.Label), "0", fmt.Sprint(tc), tc == 0)
			switch lat := r.Opt.Latencies[i]; {
			case lat <= 100*time.Millisecond:
				r.RatioCheck(fmt.Sprintf("throughput with %s", w.Label), w, 0.85)
			default:
				// The window also holds a follower's stop and catch-up,
				// so only its median is checked, not its stalls.
				b, f := r.BaselineRate(), r.Throughput(w)
				r.Check(fmt.Sprintf("throughput with %s: median second", w.Label), "≥ "+verdict.Pct(SlowLinkFloor)+" of the baseline's",
					fmt.Sprintf("%s (%.0f vs %.0f ops/s)", verdict.Pct(f/max(b, 1)), f, b), f >= SlowLinkFloor*b)
			}
		}
		if stoppedAt == 0 {
			return
		}
		d, ok := monitor.CaughtUp(ss, vs, 0, f, contAt)
		got := verdict.OrNever(d, ok)
		r.Check(fmt.Sprintf("follower %d, stopped %v, is current again after SIGCONT", f, r.Opt.Lag), "catches up", got, ok)
		after := monitor.RestoresOf(ss, 0, f, contAt, r.Timeline.Since())
		r.Figure("lagging follower caught up through a snapshot", "%v (snapshots restored: %d)", after > restoresBefore, after-restoresBefore)
	}, nil
}
