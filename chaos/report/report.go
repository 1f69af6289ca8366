// Package report writes a chaos run's files into its directory: the
// per-second timeline, events, every status poll and the checked history
// as CSV, the timeline plot (timeline.png) and the Markdown summary with
// the verdict (summary.md).
package report

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/batchkv/batchkv/chaos/experiment"
	"github.com/batchkv/batchkv/chaos/monitor"
	"github.com/batchkv/batchkv/chaos/timeline"
	"github.com/batchkv/batchkv/internal/linz"
)

// Write writes the run's files: the timelines and history as CSV, the
// plot, and the Markdown summary, which describes the scenario as about.
func Write(r *experiment.Run, about string) error {
	snap := r.Timeline.Snapshot()
	secs, evs, wins := snap.Seconds, snap.Events, snap.Windows
	ss := r.Monitor.Samples()
	vs := monitor.Views(ss, 0)
	steps := []func() error{
		func() error { return writeTimeline(r, secs, vs) },
		func() error { return writeEvents(r, evs) },
		func() error { return writeStatus(r) },
		func() error { return writeHistory(r) },
		func() error { return plot(r, secs, vs, wins) },
		func() error { return writeSummary(r, about, evs) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// path is where the run's result file name goes.
func path(r *experiment.Run, name string) string { return filepath.Join(r.Opt.Dir, name) }

// writeCSV writes a CSV file of header and rows.
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

// msf renders a duration in milliseconds with three decimals.
func msf(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64) }

// writeTimeline writes timeline.csv: every second's bulk ops, failures,
// checked ops, batch latencies and shard 0's leader and term.
func writeTimeline(r *experiment.Run, secs []timeline.Second, vs []monitor.View) error {
	var rows [][]string
	for i, s := range secs {
		v := monitor.ViewAt(vs, time.Duration(i+1)*time.Second)
		rows = append(rows, []string{strconv.Itoa(i), strconv.FormatUint(s.Ops, 10), strconv.FormatUint(s.Failed, 10),
			strconv.FormatUint(s.Checked, 10), msf(s.Lat.Quantile(0.5)), msf(s.Lat.Quantile(0.99)), msf(s.Lat.Quantile(0.999)),
			msf(s.Lat.Quantile(0.9999)), msf(s.Lat.Max()), strconv.Itoa(v.Leader), strconv.FormatUint(v.Term, 10)})
	}
	return writeCSV(path(r, "timeline.csv"), []string{"second", "bulk_ops", "bulk_failed_ops", "checked_ops",
		"p50_ms", "p99_ms", "p999_ms", "p9999_ms", "max_ms", "shard0_leader", "shard0_term"}, rows)
}

// writeEvents writes events.csv: what the harness did or saw, when.
func writeEvents(r *experiment.Run, evs []timeline.Event) error {
	var rows [][]string
	for _, e := range evs {
		rows = append(rows, []string{strconv.FormatFloat(e.At.Seconds(), 'f', 3, 64), e.What})
	}
	return writeCSV(path(r, "events.csv"), []string{"second", "event"}, rows)
}

// writeStatus writes status.csv: every replica's state at every poll.
func writeStatus(r *experiment.Run) error {
	var rows [][]string
	for _, s := range r.Monitor.Samples() {
		at := strconv.FormatFloat(s.At.Seconds(), 'f', 3, 64)
		if !s.OK {
			rows = append(rows, []string{at, strconv.Itoa(s.Server), "false", "", "", "", "", "", "", ""})
			continue
		}
		for _, st := range s.Shards {
			rows = append(rows, []string{at, strconv.Itoa(s.Server), "true", strconv.Itoa(st.Shard), st.State,
				strconv.FormatUint(st.Term, 10), st.Leader, strconv.FormatUint(st.Applied, 10),
				strconv.FormatUint(st.Commit, 10), strconv.FormatUint(st.Restores, 10)})
		}
	}
	return writeCSV(path(r, "status.csv"), []string{"second", "server", "answered", "shard", "state", "term",
		"leader", "applied", "commit", "restores"}, rows)
}

// writeHistory writes every checked op: who called it, when it was called
// and answered (ns since the start; "unknown" for a write whose outcome
// the client never learned), and what it did.
func writeHistory(r *experiment.Run) error {
	ops := r.History.Ops()
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
	return writeCSV(path(r, "history.csv"), []string{"client", "call_ns", "return_ns", "op"}, rows)
}
