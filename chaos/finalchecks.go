package chaos

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/batchkv/batchkv/chaos/experiment"
	"github.com/batchkv/batchkv/chaos/monitor"
	"github.com/batchkv/batchkv/chaos/timeline"
	"github.com/batchkv/batchkv/chaos/verdict"
	"github.com/batchkv/batchkv/internal/latency"
	"github.com/batchkv/batchkv/internal/runlog"
	"github.com/batchkv/batchkv/wire"
)

// common records the figures every scenario reports: the baseline's and
// each fault window's throughput and latency, and elections.
func common(r *experiment.Run) {
	snap := r.Timeline.Snapshot()
	// Windows of one label (the random scenario repeats faults) count
	// together.
	var labels []string
	byLabel := map[string][]timeline.Window{}
	for _, w := range snap.Windows {
		if _, ok := byLabel[w.Label]; !ok {
			labels = append(labels, w.Label)
		}
		byLabel[w.Label] = append(byLabel[w.Label], w)
	}
	for _, label := range labels {
		var h latency.Histogram
		var ops []float64
		for _, w := range byLabel[label] {
			h.Merge(snap.Latencies(w.From, w.To))
			ops = append(ops, snap.Rates(w.From, w.To)...)
		}
		r.Figure(label+": bulk ops/s (median second)", "%.0f", runlog.Median(ops))
		r.Figure(label+": batch latency p50 / p99 / p99.9 / p99.99 (batches)", "%v / %v / %v / %v (%d)",
			verdict.Millis(h.Quantile(0.5)), verdict.Millis(h.Quantile(0.99)), verdict.Millis(h.Quantile(0.999)), verdict.Millis(h.Quantile(0.9999)), h.Count())
	}
	vs := monitor.Views(r.Monitor.Samples(), 0)
	base := r.Baseline()
	r.Figure("shard 0: term changes / leader changes from the baseline on", "%d / %d",
		monitor.TermChanges(vs, base.From, r.Timeline.Since()), monitor.LeaderChanges(vs, base.From, r.Timeline.Since()))
}

// verify runs the checks every scenario ends with, and decides the
// verdict.
func verify(r *experiment.Run) {
	r.Result.CheckConvergence(func() (map[int][]wire.ShardStatus, error) { return replicaStatuses(r) }, r.Layout.Shards(), r.Opt.RF)
	n := r.Violations.Count()
	r.Check("no acknowledged write lost, every bulk read right", "0 violations",
		fmt.Sprintf("%d violations %s", n, strings.Join(r.Violations.First(), "; ")), n == 0)
	r.Result.CheckLinearizable(r.History.Ops(), r.Opt.CheckTimeout, filepath.Join(r.Opt.Dir, "linearizability.html"))
	r.Result.Decide()
}

// replicaStatuses asks every running member for its replicas' statuses,
// with their digests, by shard.
func replicaStatuses(r *experiment.Run) (map[int][]wire.ShardStatus, error) {
	byShard := map[int][]wire.ShardStatus{}
	for i, addr := range r.Procs.Addrs {
		if r.Procs.Retired(i) || r.Procs.Pid(i) == 0 {
			continue // removed from the cluster, or a spare never started
		}
		st, err := r.Procs.Admin.Status(addr, wire.StatusRequest{Digest: true}, 5*time.Second)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", addr, err)
		}
		for _, s := range st.Shards {
			byShard[s.Shard] = append(byShard[s.Shard], s)
		}
	}
	return byShard, nil
}
