package faults

import (
	"fmt"
	"time"

	"github.com/batchkv/batchkv/chaos/experiment"
	"github.com/batchkv/batchkv/chaos/monitor"
	"github.com/batchkv/batchkv/chaos/timeline"
	"github.com/batchkv/batchkv/chaos/verdict"
)

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
