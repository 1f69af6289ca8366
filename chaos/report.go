package chaos

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/batchkv/batchkv/internal/linz"
	"github.com/batchkv/batchkv/internal/plots"
)

// report writes the run's files: the timelines and history as CSV, the
// plot, and the Markdown summary.
func (r *run) report() error {
	secs, evs, wins := r.tl.snapshot()
	ss := r.mon.samples()
	vs := views(ss, 0)
	steps := []func() error{
		func() error { return r.writeTimeline(secs, vs) },
		func() error { return r.writeEvents(evs) },
		func() error { return r.writeStatus() },
		func() error { return r.writeHistory() },
		func() error { return r.plot(secs, vs, wins) },
		func() error { return r.writeSummary(evs) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

func writeCSV(path string, header []string, rows [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write(header)
	_ = w.WriteAll(rows)
	if err := w.Error(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func msf(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64) }

// viewAt returns the last poll round of shard 0 before t.
func viewAt(vs []view, t time.Duration) view {
	v := view{leader: -1}
	for _, x := range vs {
		if x.at > t {
			break
		}
		v = x
	}
	return v
}

func (r *run) writeTimeline(secs []second, vs []view) error {
	var rows [][]string
	for i, s := range secs {
		v := viewAt(vs, time.Duration(i+1)*time.Second)
		rows = append(rows, []string{strconv.Itoa(i), strconv.FormatUint(s.ops, 10), strconv.FormatUint(s.failed, 10),
			strconv.FormatUint(s.checked, 10), msf(s.lat.Quantile(0.5)), msf(s.lat.Quantile(0.99)), msf(s.lat.Quantile(0.999)),
			msf(s.lat.Quantile(0.9999)), msf(s.lat.Max()), strconv.Itoa(v.leader), strconv.FormatUint(v.term, 10)})
	}
	return writeCSV(r.resultPath("timeline.csv"), []string{"second", "bulk_ops", "bulk_failed_ops", "checked_ops",
		"p50_ms", "p99_ms", "p999_ms", "p9999_ms", "max_ms", "shard0_leader", "shard0_term"}, rows)
}

func (r *run) writeEvents(evs []Event) error {
	var rows [][]string
	for _, e := range evs {
		rows = append(rows, []string{strconv.FormatFloat(e.At.Seconds(), 'f', 3, 64), e.What})
	}
	return writeCSV(r.resultPath("events.csv"), []string{"second", "event"}, rows)
}

func (r *run) writeStatus() error {
	var rows [][]string
	for _, s := range r.mon.samples() {
		at := strconv.FormatFloat(s.at.Seconds(), 'f', 3, 64)
		if !s.ok {
			rows = append(rows, []string{at, strconv.Itoa(s.server), "false", "", "", "", "", "", "", ""})
			continue
		}
		for _, st := range s.shards {
			rows = append(rows, []string{at, strconv.Itoa(s.server), "true", strconv.Itoa(st.Shard), st.State,
				strconv.FormatUint(st.Term, 10), st.Leader, strconv.FormatUint(st.Applied, 10),
				strconv.FormatUint(st.Commit, 10), strconv.FormatUint(st.Restores, 10)})
		}
	}
	return writeCSV(r.resultPath("status.csv"), []string{"second", "server", "answered", "shard", "state", "term",
		"leader", "applied", "commit", "restores"}, rows)
}

// writeHistory writes every checked op: who called it, when it was called
// and answered (ns since the start; "unknown" for a write whose outcome
// the client never learned), and what it did.
func (r *run) writeHistory() error {
	ops := r.h.Ops()
	sort.Slice(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	rows := make([][]string, 0, len(ops))
	for _, op := range ops {
		in, out := op.Input.(linz.Input), op.Output.(linz.Output)
		ret := strconv.FormatInt(op.Return, 10)
		if op.Return == linz.Unknown {
			ret = "unknown"
		}
		rows = append(rows, []string{strconv.Itoa(op.ClientId), strconv.FormatInt(op.Call, 10), ret, linz.Describe(in, out)})
	}
	return writeCSV(r.resultPath("history.csv"), []string{"client", "call_ns", "return_ns", "op"}, rows)
}

func (r *run) plot(secs []second, vs []view, wins []Window) error {
	n := len(secs)
	at := make([]float64, n) // the middle of each second
	for i := range at {
		at[i] = float64(i) + 0.5
	}
	ops := make([]float64, n)
	p50, p99, p999 := make([]float64, n), make([]float64, n), make([]float64, n)
	term := make([]float64, n)
	for i, s := range secs {
		ops[i] = float64(s.ops)
		p50[i], p99[i], p999[i] = math.NaN(), math.NaN(), math.NaN()
		if s.lat.Count() > 0 {
			p50[i] = float64(s.lat.Quantile(0.5)) / 1e6
			p99[i] = float64(s.lat.Quantile(0.99)) / 1e6
			p999[i] = float64(s.lat.Quantile(0.999)) / 1e6
		}
		term[i] = float64(viewAt(vs, time.Duration(i+1)*time.Second).term)
	}
	var spans []plots.Span
	for _, w := range wins {
		if w.Label != "baseline" {
			spans = append(spans, plots.Span{From: w.From.Seconds(), To: w.To.Seconds(), Label: w.Label})
		}
	}
	panels := []plots.Panel{
		{YLabel: "bulk ops/s", Series: []plots.TimeSeries{{Name: "ops/s", Values: ops, Seconds: at}}},
		{YLabel: "batch latency (ms)", Series: []plots.TimeSeries{{Name: "p50", Values: p50, Seconds: at}, {Name: "p99", Values: p99, Seconds: at}, {Name: "p99.9", Values: p999, Seconds: at}}},
		{YLabel: "shard 0 term", Series: []plots.TimeSeries{{Name: "term", Values: term, Seconds: at}}},
	}
	return plots.Stacked(fmt.Sprintf("%s (shaded: faults)", r.opt.Scenario), panels, r.resultPath("timeline.png"), spans...)
}

func (r *run) writeSummary(evs []Event) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Chaos run: %s\n\n%s.\n\n", r.opt.Scenario, About(r.opt.Scenario))
	fmt.Fprintf(&b, "%d servers (and %d spares), RF=%d, %d shard(s); bulk load %d goroutines × %d ops (%.0f%% gets); %d checked clients on %d keys; seed %d; CPU limiter: %s.\n\n",
		r.opt.Servers, r.opt.Spares, r.opt.RF, r.layout.Shards(), r.opt.Bulk.Goroutines, r.opt.Bulk.Batch, 100*r.opt.Bulk.Reads,
		r.opt.Checked.Clients, r.opt.Checked.Keys, r.opt.Seed, r.cpu.Name())
	verdict := "PASS"
	if !r.res.Pass {
		verdict = "FAIL: " + r.res.Reason
	}
	fmt.Fprintf(&b, "**Verdict: %s**\n\n| check | target | measured | |\n|---|---|---|---|\n", verdict)
	for _, c := range r.res.Checks {
		mark := "pass"
		if !c.Pass {
			mark = "**FAIL**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", c.Name, c.Target, strings.ReplaceAll(c.Got, "|", "/"), mark)
	}
	b.WriteString("\n| figure | value |\n|---|---|\n")
	for _, f := range r.res.Figures {
		fmt.Fprintf(&b, "| %s | %s |\n", f.Name, f.Value)
	}
	b.WriteString("\n## Events\n\n| second | event |\n|---|---|\n")
	for _, e := range evs {
		fmt.Fprintf(&b, "| %.1f | %s |\n", e.At.Seconds(), e.What)
	}
	b.WriteString("\n![timeline](timeline.png)\n\nFiles: timeline.csv (per second), events.csv, status.csv (every replica every 200 ms), history.csv (every checked op)")
	if !r.res.Pass {
		b.WriteString(", linearizability.html (when the history is not linearizable)")
	}
	b.WriteString(", server-*.log.\n")
	return os.WriteFile(r.resultPath("summary.md"), []byte(b.String()), 0o644)
}
