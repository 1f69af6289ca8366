// Package chaos runs fault experiments against a local replicated
// cluster: it starts kvsserver processes whose Raft links go through
// toxiproxy proxies, drives a throughput load and a checked load, injects
// one scenario's faults (slow links, CPU starvation, crashes, partitions,
// pauses), and ends with a verdict: the history is linearizable, no
// acknowledged write is lost, every shard's replicas converge, and the
// scenario's own targets are met.
package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/linz"
	"github.com/batchkv/batchkv/membership"
	"github.com/batchkv/batchkv/shard"
)

// Options configure one run.
type Options struct {
	Scenario string
	Dir      string // results go here; created
	Bin      string // kvsserver binary
	Servers  int
	Shards   int
	// Spares are servers started with -join during the run (rebalance);
	// RF is the replication factor (0: Servers).
	Spares int
	RF     int
	// ServerArgs are extra kvsserver flags (Raft timing, say).
	ServerArgs []string
	// TLS runs the cluster and the loads with mutual TLS.
	TLS  bool
	Seed uint64
	// DataRoot holds the servers' data dirs (empty: Dir). The power-cut
	// scenarios put it on a power-cut filesystem.
	DataRoot string
	// PowerCut cuts the power of DataRoot's filesystem (every server is
	// down when it is called) and describes what it discarded. The
	// power-cut scenarios need it.
	PowerCut func() (string, error)

	Warmup   time.Duration // load before the baseline; not measured
	Baseline time.Duration // healthy load to compare with
	Fault    time.Duration // how long the scenario's fault lasts
	Recovery time.Duration // healed load before the final checks

	CPUFraction float64         // slow-follower: share of one CPU
	Latencies   []time.Duration // slow-network: added latencies, in turn
	Lag         time.Duration   // slow-network: how long a follower is stopped
	Restart     time.Duration   // crash-*: delay before the restart
	Pause       time.Duration   // pause: how long the leader is stopped
	Interval    time.Duration   // random: time between faults
	// FailoverBound is the time within which a new leader must serve.
	FailoverBound time.Duration

	Bulk    BulkConfig
	Checked CheckedConfig

	// Progress gets a line every second; nil: none.
	Progress io.Writer
	// CheckTimeout bounds porcupine.
	CheckTimeout time.Duration
}

// DefaultOptions returns the defaults of scenario: durations that finish
// within a few minutes.
func DefaultOptions(scenario string) Options {
	o := Options{
		Scenario: scenario, Servers: 3, Shards: 1, Seed: uint64(time.Now().UnixNano()),
		Warmup: 3 * time.Second, Baseline: 15 * time.Second, Recovery: 10 * time.Second,
		CPUFraction: 0.02, Latencies: []time.Duration{100 * time.Millisecond, 250 * time.Millisecond},
		Lag: 10 * time.Second, Restart: 5 * time.Second, Pause: 5 * time.Second, Interval: 5 * time.Second,
		FailoverBound: 2500 * time.Millisecond,
		Bulk:          BulkConfig{Goroutines: 128, Batch: 8192, Keys: 8192, Reads: 0.95, ValueSize: 32, AttemptTimeout: 5 * time.Second},
		Checked:       CheckedConfig{Clients: 16, Keys: 200, MaxOps: 8},
		CheckTimeout:  5 * time.Minute,
	}
	switch scenario {
	case "rebalance":
		// Enough shards that 3 and 4 servers each get an equal share.
		o.Shards, o.Spares, o.RF = 12, 1, 3
		o.Fault = 5 * time.Second
	case "move-killed":
		o.Shards, o.Spares, o.RF = 4, 1, 3
	case "random":
		o.Spares, o.RF = 1, 3
	case "power-cut-snapshot":
		o.ServerArgs = append(o.ServerArgs, snapshotArgs...)
	case "power-cut-move", "power-cut-map":
		o.Shards, o.Spares, o.RF = 2, 1, 3
	}
	switch scenario {
	case "slow-follower", "random":
		o.Fault = 60 * time.Second
	case "slow-network":
		o.Fault = 30 * time.Second
	default:
		o.Fault = 10 * time.Second
	}
	if IsPowerCut(scenario) {
		o.Fault = 5 * time.Second // load before the cut
		o.Restart = time.Second   // power off
	}
	return o
}

// Result is a run's outcome.
type Result struct {
	Pass    bool
	Reason  string // why it failed
	Checks  []Check
	Figures []Figure
}

// Check is one verdict criterion.
type Check struct {
	Name, Target, Got string
	Pass              bool
}

// Figure is a measured value that has no target.
type Figure struct{ Name, Value string }

// run is the state of one run.
type run struct {
	opt    Options
	c      *Cluster
	layout *shard.Layout
	tl     *timeline
	h      *linz.History
	mon    *monitor
	probe  *probe
	pins   []*pinned
	cpu    CPULimiter
	v      violations
	res    Result
	logf   func(format string, args ...any)
	// drv changes the cluster's membership (rebalance, random's moves).
	drv     *membership.Cluster
	drvOnce sync.Once
	// onStep, if set, sees every step the driver reports.
	onStep atomic.Pointer[func(string)]
}

// Run runs one scenario and writes its results under opt.Dir.
func Run(opt Options) (*Result, error) {
	sc, ok := scenarios[opt.Scenario]
	if !ok {
		return nil, fmt.Errorf("chaos: unknown scenario %q (want one of %v)", opt.Scenario, ScenarioNames())
	}
	if _, err := os.Stat(filepath.Join(opt.Dir, "data-0")); err == nil {
		return nil, fmt.Errorf("chaos: %s already holds a run; pick a new directory", opt.Dir)
	}
	if err := os.MkdirAll(opt.Dir, 0o755); err != nil {
		return nil, err
	}
	r := &run{opt: opt, cpu: NewCPULimiter(CgroupRoot), logf: func(string, ...any) {}}
	if opt.Progress != nil {
		r.logf = func(format string, args ...any) {
			fmt.Fprintf(opt.Progress, "[%5.1fs] %s\n", r.tl.since().Seconds(), fmt.Sprintf(format, args...))
		}
	}
	var err error
	if opt.RF == 0 {
		opt.RF = opt.Servers
	}
	r.opt.RF = opt.RF
	r.c, err = StartCluster(ClusterConfig{Bin: opt.Bin, Dir: opt.Dir, Servers: opt.Servers, Spares: opt.Spares, RF: opt.RF,
		Shards: opt.Shards, Args: opt.ServerArgs, TLS: opt.TLS, DataRoot: opt.DataRoot, SmallDisks: smallDisks[opt.Scenario]})
	if err != nil {
		return nil, err
	}
	defer r.c.Close()
	defer func() { _ = r.driver().Close() }()
	live.add(r)
	defer live.remove(r)
	if r.layout, err = shard.New(r.c.Members(), opt.Shards, opt.RF, 0); err != nil {
		return nil, err
	}
	r.h = linz.NewHistory()
	r.tl = newTimeline(r.h.Start())
	r.mon = &monitor{addrs: r.c.Addrs, admin: r.c.Admin, tl: r.tl}
	if err := r.waitLeaders(30 * time.Second); err != nil {
		return nil, err
	}
	r.logf("cluster up: %v, %d shard(s), RF=%d; CPU limiter: %s; seed %d", r.c.Members(), r.layout.Shards(), opt.RF, r.cpu.Name(), opt.Seed)
	if err := r.drive(sc); err != nil {
		return nil, err
	}
	r.verify()
	if err := r.report(); err != nil {
		return nil, err
	}
	return &r.res, nil
}

// live holds the runs in progress, for Abort.
var live liveRuns

type liveRuns struct {
	mu   sync.Mutex
	runs map[*run]bool
}

func (l *liveRuns) add(r *run) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runs == nil {
		l.runs = map[*run]bool{}
	}
	l.runs[r] = true
}

func (l *liveRuns) remove(r *run) {
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
		for i := range r.c.Addrs {
			if pid := r.c.Pid(i); pid != 0 {
				_ = r.cpu.Unlimit(pid)
			}
		}
		r.c.Close()
	}
}

// newClient returns a replicated client that gives up an attempt on a
// silent server after attempt (a broken connection fails at once).
func (r *run) newClient(attempt time.Duration) (*client.Client, error) {
	return client.New(client.Config{Servers: r.c.Members(), Shards: r.layout.Shards(), Replicas: r.layout.RF(),
		AttemptTimeout: attempt, DialTimeout: time.Second, TLS: r.c.ClientTLS})
}

// waitLeaders waits until every shard's preferred replica leads it.
func (r *run) waitLeaders(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		r.mon.poll()
		ss := r.mon.samples()
		ready := true
		for sh := range r.layout.Shards() {
			vs := views(ss, sh)
			if len(vs) == 0 || vs[len(vs)-1].leader != r.layout.Preferred(sh) {
				ready = false
			}
		}
		if ready {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return errors.New("chaos: the preferred replicas did not all lead within the timeout")
}

// drive runs the loads around the scenario's faults, then heals whatever
// is left and lets the cluster recover under load.
func (r *run) drive(sc scenario) error {
	bulkCl, err := r.newClient(r.opt.Bulk.AttemptTimeout)
	if err != nil {
		return err
	}
	defer func() { _ = bulkCl.Close() }()
	checkCl, err := r.newClient(time.Second)
	if err != nil {
		return err
	}
	defer func() { _ = checkCl.Close() }()
	bulk := newBulkLoad(r.opt.Bulk, bulkCl, r.tl, r.opt.Seed, &r.v)
	r.probe = newProbe(r.layout, 0)
	stop, monStop := make(chan struct{}), make(chan struct{})
	var wg, monWg sync.WaitGroup
	monWg.Add(2)
	go func() { defer monWg.Done(); r.mon.run(monStop) }()
	go func() { defer monWg.Done(); r.progress(monStop) }()
	wg.Add(3)
	go func() { defer wg.Done(); bulk.run(stop) }()
	go func() { defer wg.Done(); runChecked(r.opt.Checked, checkCl, r.h, r.tl, r.opt.Seed, stop) }()
	go func() { defer wg.Done(); r.probe.run(checkCl, r.h, stop) }()
	for i, addr := range r.c.Members() {
		p := newPinned(addr, r.layout, 0, r.opt.Checked.Keys)
		r.pins = append(r.pins, p)
		wg.Add(1)
		go func() { defer wg.Done(); p.run(i, r.h, r.opt.Seed, stop) }()
	}

	r.phase("warmup", r.opt.Warmup)
	from := r.tl.event("baseline")
	time.Sleep(r.opt.Baseline)
	r.tl.window(from, r.tl.since(), "baseline")
	analyse, serr := sc.inject(r)
	r.healAll()
	r.phase("recovery", r.opt.Recovery)
	close(stop)
	wg.Wait()
	r.tl.event("load stopped")
	if serr != nil {
		close(monStop)
		monWg.Wait()
		return serr
	}
	r.finalReads(bulk)
	close(monStop)
	monWg.Wait()
	r.common()
	if analyse != nil {
		analyse()
	}
	return nil
}

// phase logs a phase and waits it out.
func (r *run) phase(name string, d time.Duration) {
	r.tl.event(name)
	time.Sleep(d)
}

// healAll lifts every fault: links, CPU limits, stopped and dead servers.
func (r *run) healAll() {
	for i := range r.c.Addrs {
		if r.c.Retired(i) {
			continue
		}
		if err := r.c.Links.Heal(i); err != nil {
			r.logf("heal links of %d: %v", i, err)
		}
		if pid := r.c.Pid(i); pid != 0 {
			if err := r.cpu.Unlimit(pid); err != nil {
				r.logf("lift the CPU limit of %d: %v", i, err)
			}
			_ = r.c.Signal(i, syscall.SIGCONT)
			continue
		}
		if err := r.c.Start(i); err != nil {
			r.logf("restart %d: %v", i, err)
		}
	}
	r.tl.event("healed")
}

// progress prints a line every second.
func (r *run) progress(stop <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		secs, evs, _ := r.tl.snapshot()
		last := int(r.tl.since()/time.Second) - 1
		if last < 0 || last >= len(secs) {
			continue
		}
		s := secs[last]
		vs := views(r.mon.samples(), 0)
		leader, term := -1, uint64(0)
		if len(vs) > 0 {
			leader, term = vs[len(vs)-1].leader, vs[len(vs)-1].term
		}
		phase := ""
		if len(evs) > 0 {
			phase = evs[len(evs)-1].What
		}
		r.logf("%-22s ops/s %9d  failed %6d  p99 %8v  checked ops/s %5d  shard 0 leader %2d term %d  violations %d",
			phase, s.ops, s.failed, s.lat.Quantile(0.99).Round(10*time.Microsecond), s.checked, leader, term, r.v.count())
	}
}

// finalReads reads every key after the load: the checked keys go into
// the history, the bulk keys are checked against their writers.
func (r *run) finalReads(bulk *bulkLoad) {
	cl, err := r.newClient(5 * time.Second)
	if err != nil {
		r.v.add(fmt.Sprintf("final reads: %v", err))
		return
	}
	defer func() { _ = cl.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n, err := bulk.finalCheck(ctx, cl)
	if err != nil {
		r.v.add(err.Error())
	}
	keys := append(checkedKeys(r.opt.Checked.Keys), r.probe.key)
	for _, k := range keys {
		ops := finalGet(k)
		call := r.h.Now()
		res, err := cl.Do(ctx, ops)
		r.h.Record(finalClient, ops, res, err, call, r.h.Now())
		if err != nil {
			r.v.add(fmt.Sprintf("final read %s: %v", k, err))
		}
	}
	r.logf("final reads: %d bulk keys and %d checked keys", n, len(keys))
}

// resultPath is where a result file goes.
func (r *run) resultPath(name string) string { return filepath.Join(r.opt.Dir, name) }
