package report

import (
	"fmt"
	"os"
	"strings"

	"github.com/batchkv/batchkv/chaos/experiment"
	"github.com/batchkv/batchkv/chaos/timeline"
)

// writeSummary writes summary.md: the run's set-up, verdict, checks,
// figures and events.
func writeSummary(r *experiment.Run, about string, evs []timeline.Event) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Chaos run: %s\n\n%s.\n\n", r.Opt.Scenario, about)
	fmt.Fprintf(&b, "%d servers (and %d spares), RF=%d, %d shard(s); bulk load %d goroutines × %d ops (%.0f%% gets); %d checked clients on %d keys; seed %d; CPU limiter: %s.\n\n",
		r.Opt.Servers, r.Opt.Spares, r.Opt.RF, r.Layout.Shards(), r.Opt.Bulk.Goroutines, r.Opt.Bulk.Batch, 100*r.Opt.Bulk.Reads,
		r.Opt.Checked.Clients, r.Opt.Checked.Keys, r.Opt.Seed, r.CPU.Name())
	verdict := "PASS"
	if !r.Result.Pass {
		verdict = "FAIL: " + r.Result.Reason
	}
	fmt.Fprintf(&b, "**Verdict: %s**\n\n| check | target | measured | |\n|---|---|---|---|\n", verdict)
	for _, c := range r.Result.Checks {
		mark := "pass"
		if !c.Pass {
			mark = "**FAIL**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", c.Name, c.Target, strings.ReplaceAll(c.Got, "|", "/"), mark)
	}
	b.WriteString("\n| figure | value |\n|---|---|\n")
	for _, f := range r.Result.Figures {
		fmt.Fprintf(&b, "| %s | %s |\n", f.Name, f.Value)
	}
	b.WriteString("\n## Events\n\n| second | event |\n|---|---|\n")
	for _, e := range evs {
		fmt.Fprintf(&b, "| %.1f | %s |\n", e.At.Seconds(), e.What)
	}
	b.WriteString("\n![timeline](timeline.png)\n\nFiles: timeline.csv (per second), events.csv, status.csv (every replica every 200 ms), history.csv (every checked op)")
	if !r.Result.Pass {
		b.WriteString(", linearizability.html (when the history is not linearizable)")
	}
	b.WriteString(", server-*.log.\n")
	return os.WriteFile(path(r, "summary.md"), []byte(b.String()), 0o644)
}
