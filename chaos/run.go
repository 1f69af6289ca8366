// Package chaos runs fault experiments against a local replicated
// cluster: it starts kvsserver processes whose Raft links go through
// toxiproxy proxies (chaos/procs), drives a throughput load and a checked
// load (chaos/load), injects one scenario's faults (slow links, CPU
// starvation, crashes, partitions, pauses, membership changes, full
// disks, power cuts: chaos/faults, chaos/moves, chaos/diskfull,
// chaos/powercuts), and ends with a verdict (chaos/verdict) and its files
// (chaos/report): the history is linearizable, no acknowledged write is
// lost, every shard's replicas converge, and the scenario's own targets
// are met.
package chaos

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/batchkv/batchkv/chaos/cpulimit"
	"github.com/batchkv/batchkv/chaos/experiment"
	"github.com/batchkv/batchkv/chaos/monitor"
	"github.com/batchkv/batchkv/chaos/procs"
	"github.com/batchkv/batchkv/chaos/report"
	"github.com/batchkv/batchkv/chaos/timeline"
	"github.com/batchkv/batchkv/chaos/verdict"
	"github.com/batchkv/batchkv/internal/linz"
	"github.com/batchkv/batchkv/shard"
)

// Errors of Run.
var (
	// ErrUnknownScenario is a scenario name that is not registered.
	ErrUnknownScenario = errors.New("chaos: unknown scenario")
	// ErrDirUsed is a results directory that holds a run already.
	ErrDirUsed = errors.New("chaos: directory already holds a run")
)

// Run runs one scenario and writes its results under opt.Dir.
func Run(opt experiment.Options) (*verdict.Result, error) {
	sc, ok := scenarios[opt.Scenario]
	if !ok {
		return nil, fmt.Errorf("%w %q (want one of %v)", ErrUnknownScenario, opt.Scenario, ScenarioNames())
	}
	if opt.RF == 0 {
		opt.RF = opt.Servers
	}
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(opt.Dir, "data-0")); err == nil {
		return nil, fmt.Errorf("chaos: %s already holds a run; pick a new directory (%w)", opt.Dir, ErrDirUsed)
	}
	if err := os.MkdirAll(opt.Dir, 0o755); err != nil {
		return nil, err
	}
	r := &experiment.Run{Opt: opt, CPU: cpulimit.New(cpulimit.CgroupRoot), Logf: func(string, ...any) {}}
	if opt.Progress != nil {
		r.Logf = func(format string, args ...any) {
			fmt.Fprintf(opt.Progress, "[%5.1fs] %s\n", r.Timeline.Since().Seconds(), fmt.Sprintf(format, args...))
		}
	}
	var err error
	r.Procs, err = procs.Start(procs.Config{Bin: opt.Bin, Dir: opt.Dir, Servers: opt.Servers, Spares: opt.Spares, RF: opt.RF,
		Shards: opt.Shards, Args: opt.ServerArgs, TLS: opt.TLS, DataRoot: opt.DataRoot, SmallDisks: sc.SmallDisks})
	if err != nil {
		return nil, err
	}
	defer r.Procs.Close()
	defer func() { _ = r.CloseDriver() }()
	live.add(r)
	defer live.remove(r)
	if r.Layout, err = shard.New(r.Procs.Members(), opt.Shards, opt.RF, 0); err != nil {
		return nil, err
	}
	r.History = linz.NewHistory()
	r.Timeline = timeline.New(r.History.Start())
	r.Monitor = monitor.New(r.Procs.Addrs, r.Procs.Admin, r.Timeline)
	if err := waitLeaders(r, 30*time.Second); err != nil {
		return nil, err
	}
	r.Logf("cluster up: %v, %d shard(s), RF=%d; CPU limiter: %s; seed %d", r.Procs.Members(), r.Layout.Shards(), opt.RF, r.CPU.Name(), opt.Seed)
	if opt.ServerCPU > 0 {
		defer func() {
			for i := range opt.Servers {
				_ = r.CPU.Unlimit(r.Procs.Pid(i))
			}
		}()
		for i := range opt.Servers {
			if err := r.CPU.Limit(r.Procs.Pid(i), opt.ServerCPU); err != nil {
				return nil, fmt.Errorf("chaos: limit server %d to %v of a CPU: %w", i, opt.ServerCPU, err)
			}
		}
		r.Logf("every server limited to %.2f of a CPU", opt.ServerCPU)
	}
	if err := drive(r, sc); err != nil {
		return nil, err
	}
	verify(r)
	if err := report.Write(r, About(opt.Scenario)); err != nil {
		return nil, err
	}
	return &r.Result, nil
}

// live holds the runs in progress, for Abort.
var live liveRuns

// liveRuns is a set of runs in progress.
type liveRuns struct {
	mu   sync.Mutex
	runs map[*experiment.Run]bool
}

func (l *liveRuns) add(r *experiment.Run) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runs == nil {
		l.runs = map[*experiment.Run]bool{}
	}
	l.runs[r] = true
}

func (l *liveRuns) remove(r *experiment.Run) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.runs, r)
}

// Abort ends every run in progress at once, for a harness that is
// interrupted: it lifts the CPU limits, resumes stopped servers and stops
// every server, so that nothing is left throttled, stopped or running.
func Abort() {
	live.mu.Lock()
	defer live.mu.Unlock()
	for r := range live.runs {
		for i := range r.Procs.Addrs {
			if pid := r.Procs.Pid(i); pid != 0 {
				_ = r.CPU.Unlimit(pid)
			}
		}
		r.Procs.Close()
	}
}
