// Command kvschaos runs a fault experiment against a local RF=3 cluster
// and ends with a verdict line (chaos.sh wraps it).
//
//	kvschaos -bin bin/kvsserver slow-follower
//	kvschaos -bin bin/kvsserver -fault 20s crash-leader
//	kvschaos -bin bin/kvsserver all
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/batchkv/batchkv/chaos"
	"github.com/batchkv/batchkv/chaos/experiment"
	"github.com/batchkv/batchkv/chaos/load"
	"github.com/batchkv/batchkv/internal/cli"
	"github.com/batchkv/batchkv/internal/powercut"
)

func main() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		fmt.Println("verdict: FAIL interrupted")
		chaos.Abort() // no server is left running, stopped or throttled
		unmountAll()
		os.Exit(130)
	}()
	pass, err := run(os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kvschaos:", err)
		fmt.Println("verdict: FAIL", err)
		os.Exit(1)
	}
	if !pass {
		os.Exit(1)
	}
}

// durationFlag is a duration flag that remembers whether it was set.
type durationFlag struct {
	d   time.Duration
	set bool
}

func (f *durationFlag) String() string { return f.d.String() }
func (f *durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	f.d, f.set = d, true
	return err
}

func run(args []string, stdout, stderr io.Writer) (bool, error) {
	fs := flag.NewFlagSet("kvschaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: kvschaos [flags] SCENARIO|all\n\nScenarios:\n")
		for _, name := range slices.Concat(chaos.ScenarioNames(), chaos.DiskFaultNames(), chaos.PowerCutNames()) {
			fmt.Fprintf(stderr, "  %-18s %s\n", name, chaos.About(name))
		}
		fmt.Fprintf(stderr, "  %-18s %s\n", "power-cut-all", "the four power-cut scenarios in turn (not part of all: they need root and FUSE)")
		fmt.Fprintf(stderr, "\nFlags (durations left unset take the scenario's default):\n")
		fs.PrintDefaults()
	}
	bin := fs.String("bin", "bin/kvsserver", "kvsserver binary")
	dir := fs.String("dir", "", "results directory (default logs/chaos-<time>/<scenario>)")
	seed := fs.Uint64("seed", 0, "random seed (0: from the clock)")
	shards := fs.Int("shards", 0, "shards, one Raft group each (0: the scenario's default: 12 for rebalance, on 3 of the 4 servers each; 1 otherwise, on all 3)")
	serverArgs := fs.String("server-args", "", "extra kvsserver flags, space-separated (e.g. \"-raft-heartbeat 1s\")")
	useTLS := fs.Bool("tls", false, "mutual TLS on every connection: a CA and certificates are made under the results directory")
	var warmup, baseline, fault, recovery, lag, restart, pause, interval durationFlag
	fs.Var(&warmup, "warmup", fmt.Sprintf("load before the baseline, not measured (default %v)", experiment.DefaultWarmup))
	fs.Var(&baseline, "baseline", fmt.Sprintf("healthy load measured as the baseline (default %v)", experiment.DefaultBaseline))
	fs.Var(&fault, "fault", fmt.Sprintf("how long the fault lasts (default %s slow-follower and random, %s per step slow-network, %s otherwise)",
		secs(chaos.DefaultOptions("slow-follower").Fault), secs(chaos.DefaultOptions("slow-network").Fault), secs(experiment.DefaultFault)))
	fs.Var(&recovery, "recovery", fmt.Sprintf("healed load before the final checks (default %v)", experiment.DefaultRecovery))
	fs.Var(&lag, "lag", fmt.Sprintf("slow-network: how long a follower is stopped so that it lags (default %v; 0: none)", experiment.DefaultLag))
	fs.Var(&restart, "restart", fmt.Sprintf("crash-*: delay before the restart (default %v)", experiment.DefaultRestart))
	fs.Var(&pause, "pause", fmt.Sprintf("pause: how long the leader is stopped (default %v)", experiment.DefaultPause))
	fs.Var(&interval, "interval", fmt.Sprintf("random: time between faults (default %v)", experiment.DefaultInterval))
	cpu := fs.Float64("cpu", experiment.DefaultCPUFraction, "slow-follower: share of one CPU the follower gets")
	serverCPU := fs.Float64("server-cpu", 0, "share of one CPU each server gets for the whole run (0: no limit), as a slower machine would give them; a scenario that limits or restarts a server lifts it there")
	lats := fs.String("latencies", joinDurations(experiment.DefaultLatencies()), "slow-network: latencies added in turn, comma-separated")
	goroutines := fs.Int("goroutines", load.DefaultGoroutines, "bulk load: concurrent batches")
	batch := fs.Int("batch", load.DefaultBatch, "bulk load: ops per batch (each goroutine owns as many keys)")
	attempt := fs.Duration("attempt-timeout", load.DefaultAttemptTimeout, "bulk load: client's timeout of one attempt on a silent server")
	checked := fs.Int("checked-clients", load.DefaultCheckedClients, "checked load: clients")
	repeat := fs.Int("repeat", 1, "run every scenario this many times and end with a tally of verdicts")
	cutMode := fs.String("powercut-mode", "strict", "power-cut scenarios: the filesystem's mode, strict (POSIX: only a directory's fsync saves its entries) or ext4 (a file's fsync saves its own entry too)")
	keepData := fs.Bool("keep-data", false, "keep the servers' data dirs (Raft logs and snapshots, hundreds of MB a run) after a PASS; a FAIL always keeps them")
	if err := cli.Parse(fs, args, stdout, stderr); err != nil {
		if errors.Is(err, cli.ErrHelpShown) {
			return true, nil
		}
		return false, err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return false, fmt.Errorf("want one scenario")
	}
	names := []string{fs.Arg(0)}
	switch names[0] {
	case "all":
		names = chaos.ScenarioNames()
	case "power-cut-all":
		names = chaos.PowerCutNames()
	}
	mode, err := powercut.ParseMode(*cutMode)
	if err != nil {
		return false, err
	}
	root := *dir
	if root == "" {
		root = filepath.Join("logs", "chaos-"+time.Now().Format("20060102-150405"))
	}
	var latencies []time.Duration
	for _, s := range strings.Split(*lats, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return false, fmt.Errorf("-latencies: %w", err)
		}
		latencies = append(latencies, d)
	}
	if *repeat < 1 {
		return false, fmt.Errorf("-repeat %d: want at least 1", *repeat)
	}
	allPass := true
	var failed []string
	tally := newTally(names)
	for round := 1; round <= *repeat; round++ {
		for _, name := range names {
			o := chaos.DefaultOptions(name)
			o.Bin, o.Progress = *bin, stdout
			if *shards > 0 {
				o.Shards = *shards
			}
			o.Dir = root
			if len(names) > 1 || *dir == "" || *repeat > 1 {
				o.Dir = filepath.Join(root, name)
			}
			if *repeat > 1 {
				o.Dir = filepath.Join(root, fmt.Sprintf("%s-%d", name, round))
			}
			if *seed != 0 {
				o.Seed = *seed
			}
			o.ServerArgs = append(o.ServerArgs, strings.Fields(*serverArgs)...)
			o.TLS = *useTLS
			for _, f := range []struct {
				flag *durationFlag
				dst  *time.Duration
			}{{&warmup, &o.Warmup}, {&baseline, &o.Baseline}, {&fault, &o.Fault}, {&recovery, &o.Recovery},
				{&lag, &o.Lag}, {&restart, &o.Restart}, {&pause, &o.Pause}, {&interval, &o.Interval}} {
				if f.flag.set {
					*f.dst = f.flag.d
				}
			}
			o.CPUFraction, o.ServerCPU, o.Latencies = *cpu, *serverCPU, latencies
			o.Bulk.Goroutines, o.Bulk.Batch, o.Bulk.Keys, o.Checked.Clients = *goroutines, *batch, *batch, *checked
			o.Bulk.AttemptTimeout = *attempt
			fmt.Fprintf(stdout, "== %s: %s; results in %s\n", name, chaos.About(name), o.Dir)
			if *repeat > 1 {
				fmt.Fprintf(stdout, "   (run %d of %d)\n", round, *repeat)
			}
			unmount := func() {}
			if chaos.IsPowerCut(name) {
				if unmount, err = mountPowerCut(&o, mode); err != nil {
					return false, err
				}
			}
			res, err := chaos.Run(o)
			unmount()
			if err != nil {
				allPass = false
				failed = append(failed, name)
				tally.add(name, false, []string{"the run did not complete: " + err.Error()})
				fmt.Fprintf(stdout, "verdict: FAIL %s: the run did not complete: %v\n", name, err)
				continue
			}
			var failedChecks []string
			for _, c := range res.Checks {
				mark := "pass"
				if !c.Pass {
					mark = "FAIL"
					failedChecks = append(failedChecks, fmt.Sprintf("%s: %s (target %s)", c.Name, c.Got, c.Target))
				}
				fmt.Fprintf(stdout, "  %-4s %s: %s (target %s)\n", mark, c.Name, c.Got, c.Target)
			}
			for _, f := range res.Figures {
				fmt.Fprintf(stdout, "       %s: %s\n", f.Name, f.Value)
			}
			tally.add(name, res.Pass, failedChecks)
			if res.Pass && !*keepData {
				removeData(o.Dir, stdout)
			}
			if res.Pass {
				fmt.Fprintf(stdout, "verdict: PASS %s (summary: %s)\n", name, filepath.Join(o.Dir, "summary.md"))
			} else {
				allPass = false
				failed = append(failed, name)
				fmt.Fprintf(stdout, "verdict: FAIL %s: %s (summary: %s)\n", name, res.Reason, filepath.Join(o.Dir, "summary.md"))
			}
		}
	}
	if *repeat > 1 {
		tally.print(stdout)
	}
	if len(names) > 1 || *repeat > 1 {
		if allPass {
			fmt.Fprintf(stdout, "verdict: PASS all %d scenarios\n", len(names))
		} else {
			fmt.Fprintf(stdout, "verdict: FAIL %s\n", strings.Join(failed, ", "))
		}
	}
	return allPass, nil
}

// secs renders a whole number of seconds as flag help gives it ("60s").
func secs(d time.Duration) string { return fmt.Sprintf("%.0fs", d.Seconds()) }

// joinDurations renders durations as the -latencies flag takes them.
func joinDurations(ds []time.Duration) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, d.String())
	}
	return strings.Join(parts, ",")
}

// removeData deletes the servers' data dirs of a run that passed: its
// summary, timeline, history and logs stay.
func removeData(dir string, stdout io.Writer) {
	dirs, _ := filepath.Glob(filepath.Join(dir, "data-*"))
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil {
			fmt.Fprintf(stdout, "warning: could not remove %s: %v\n", d, err)
		}
	}
}
