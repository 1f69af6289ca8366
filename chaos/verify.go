package chaos

import (
	"fmt"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/batchkv/batchkv/internal/latency"
	"github.com/batchkv/batchkv/internal/linz"
	"github.com/batchkv/batchkv/internal/replcheck"
	"github.com/batchkv/batchkv/internal/runlog"
	"github.com/batchkv/batchkv/wire"
)

func finalGet(key string) []wire.Op { return []wire.Op{{Code: wire.OpGet, Key: key}} }

// check records a verdict criterion.
func (r *run) check(name, target, got string, pass bool) {
	r.res.Checks = append(r.res.Checks, Check{Name: name, Target: target, Got: got, Pass: pass})
}

// figure records a measured value without a target.
func (r *run) figure(name, format string, args ...any) {
	r.res.Figures = append(r.res.Figures, Figure{Name: name, Value: fmt.Sprintf(format, args...)})
}

// windowOf returns the first window with label.
func (r *run) windowOf(label string) (Window, bool) {
	_, _, wins := r.tl.snapshot()
	for _, w := range wins {
		if w.Label == label {
			return w, true
		}
	}
	return Window{}, false
}

// baselineAgain labels a healthy phase between two faults of one
// scenario, whose seconds count as baseline (see baselineRate).
const baselineAgain = "baseline again"

// slowLinkFloor is the least median second, against the baseline's, with
// 250 ms or more added to the leader's links.
const slowLinkFloor = 0.60

// baselineRate returns the median bulk ops/s over the whole seconds of
// the baseline and of every healthy phase between faults.
func (r *run) baselineRate() float64 {
	secs, _, wins := r.tl.snapshot()
	var all []float64
	for _, w := range wins {
		if w.Label == "baseline" || w.Label == baselineAgain {
			all = append(all, rates(secs, w.From, w.To)...)
		}
	}
	return runlog.Median(all)
}

// throughput returns the median bulk ops/s over w's whole seconds.
func (r *run) throughput(w Window) float64 {
	secs, _, _ := r.tl.snapshot()
	return runlog.Median(rates(secs, w.From, w.To))
}

// common records the figures every scenario reports: the baseline's and
// each fault window's throughput and latency, and elections.
func (r *run) common() {
	secs, _, wins := r.tl.snapshot()
	// Windows of one label (the random scenario repeats faults) count
	// together.
	var labels []string
	byLabel := map[string][]Window{}
	for _, w := range wins {
		if _, ok := byLabel[w.Label]; !ok {
			labels = append(labels, w.Label)
		}
		byLabel[w.Label] = append(byLabel[w.Label], w)
	}
	for _, label := range labels {
		var h latency.Histogram
		var ops []float64
		for _, w := range byLabel[label] {
			h.Merge(latencies(secs, w.From, w.To))
			ops = append(ops, rates(secs, w.From, w.To)...)
		}
		r.figure(label+": bulk ops/s (median second)", "%.0f", runlog.Median(ops))
		r.figure(label+": batch latency p50 / p99 / p99.9 / p99.99 (batches)", "%v / %v / %v / %v (%d)",
			ms(h.Quantile(0.5)), ms(h.Quantile(0.99)), ms(h.Quantile(0.999)), ms(h.Quantile(0.9999)), h.Count())
	}
	vs := views(r.mon.samples(), 0)
	base, _ := r.windowOf("baseline")
	r.figure("shard 0: term changes / leader changes from the baseline on", "%d / %d",
		termChanges(vs, base.From, r.tl.since()), leaderChanges(vs, base.From, r.tl.since()))
}

// verify runs the checks every scenario ends with.
func (r *run) verify() {
	r.checkConvergence()
	n := r.v.count()
	r.check("no acknowledged write lost, every bulk read right", "0 violations",
		fmt.Sprintf("%d violations %s", n, strings.Join(r.v.first, "; ")), n == 0)
	ops := r.h.Ops()
	t0 := time.Now()
	res, err := linz.Check(ops, r.opt.CheckTimeout, r.resultPath("linearizability.html"))
	got := map[porcupine.CheckResult]string{porcupine.Ok: "linearizable", porcupine.Illegal: "NOT linearizable (see linearizability.html)",
		porcupine.Unknown: "checker timed out"}[res]
	if err != nil {
		got += "; " + err.Error()
	}
	r.check("checked history is linearizable", "linearizable",
		fmt.Sprintf("%s: %d ops, checked in %v", got, len(ops), time.Since(t0).Round(time.Millisecond)), res == porcupine.Ok)
	r.res.Pass = true
	for _, c := range r.res.Checks {
		if !c.Pass {
			r.res.Pass = false
			if r.res.Reason == "" {
				r.res.Reason = fmt.Sprintf("%s: want %s, got %s", c.Name, c.Target, c.Got)
			}
		}
	}
}

// checkConvergence waits until every replica of every shard has applied
// the same entries, then compares the shards' digests.
func (r *run) checkConvergence() {
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		byShard := map[int][]wire.ShardStatus{}
		ok := true
		for i, addr := range r.c.Addrs {
			if r.c.Retired(i) || r.c.Pid(i) == 0 {
				continue // removed from the cluster, or a spare never started
			}
			st, err := r.c.Admin.Status(addr, wire.StatusRequest{Digest: true}, 5*time.Second)
			if err != nil {
				ok, last = false, fmt.Sprintf("%s: %v", addr, err)
				break
			}
			for _, s := range st.Shards {
				byShard[s.Shard] = append(byShard[s.Shard], s)
			}
		}
		if ok {
			settled, agree, desc := compareReplicas(byShard, r.layout.Shards(), r.opt.RF)
			last = desc
			if settled {
				r.check("replicas converge", "same digest on every replica of every shard", desc, agree)
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.check("replicas converge", "same digest on every replica of every shard", "did not settle in 30s: "+last, false)
}

// compareReplicas says whether every shard's replicas have applied the
// same index (settled), and if so whether their digests agree
// (replcheck.Compare, as kvsctl verify compares them).
func compareReplicas(byShard map[int][]wire.ShardStatus, shards, rf int) (settled, agree bool, desc string) {
	agree = true
	var parts []string
	for sh := range shards {
		var reps []replcheck.Replica
		for i, s := range byShard[sh] {
			reps = append(reps, replcheck.Replica{Addr: fmt.Sprintf("replica %d", i), Status: s})
		}
		v := replcheck.Compare(sh, reps, rf)
		if !v.Settled {
			return false, false, v.Desc
		}
		agree = agree && v.OK()
		parts = append(parts, v.Desc)
	}
	return true, agree, strings.Join(parts, "; ")
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}
