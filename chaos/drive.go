package chaos

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/batchkv/batchkv/chaos/experiment"
	"github.com/batchkv/batchkv/chaos/load"
	"github.com/batchkv/batchkv/chaos/monitor"
	"github.com/batchkv/batchkv/chaos/timeline"
	"github.com/batchkv/batchkv/client"
)

// newClient returns a replicated client that gives up an attempt on a
// silent server after attempt (a broken connection fails at once).
func newClient(r *experiment.Run, attempt time.Duration) (*client.Client, error) {
	return client.New(client.Config{Servers: r.Procs.Members(), Shards: r.Layout.Shards(), RF: r.Layout.RF(),
		AttemptTimeout: attempt, DialTimeout: time.Second, TLS: r.Procs.ClientTLS})
}

// waitLeaders waits until every shard's preferred replica leads it.
func waitLeaders(r *experiment.Run, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		r.Monitor.Poll()
		ss := r.Monitor.Samples()
		ready := true
		for sh := range r.Layout.Shards() {
			vs := monitor.Views(ss, sh)
			if len(vs) == 0 || vs[len(vs)-1].Leader != r.Layout.Preferred(sh) {
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
func drive(r *experiment.Run, sc experiment.Scenario) error {
	bulkCl, err := newClient(r, r.Opt.Bulk.AttemptTimeout)
	if err != nil {
		return err
	}
	defer func() { _ = bulkCl.Close() }()
	checkCl, err := newClient(r, time.Second)
	if err != nil {
		return err
	}
	defer func() { _ = checkCl.Close() }()
	bulk := load.NewBulk(r.Opt.Bulk, bulkCl, r.Timeline, r.Opt.Seed, &r.Violations)
	r.Bulk = bulk
	r.Probe = load.NewProbe(r.Layout, 0)
	stop, monStop := make(chan struct{}), make(chan struct{})
	var wg, monWg sync.WaitGroup
	monWg.Add(2)
	go func() { defer monWg.Done(); r.Monitor.Run(monStop) }()
	go func() { defer monWg.Done(); progress(r, monStop) }()
	wg.Add(3)
	go func() { defer wg.Done(); bulk.Run(stop) }()
	go func() {
		defer wg.Done()
		load.RunChecked(r.Opt.Checked, checkCl, r.History, r.Timeline, r.Opt.Seed, stop)
	}()
	go func() { defer wg.Done(); r.Probe.Run(checkCl, r.History, stop) }()
	for i, addr := range r.Procs.Members() {
		p := load.NewPinned(addr, r.Layout, 0, r.Opt.Checked.Keys)
		r.Pins = append(r.Pins, p)
		wg.Add(1)
		go func() { defer wg.Done(); p.Run(i, r.History, r.Opt.Seed, stop) }()
	}

	phase(r, "warmup", r.Opt.Warmup)
	from := r.Timeline.Event(timeline.Baseline)
	time.Sleep(r.Opt.Baseline)
	r.Timeline.Window(from, r.Timeline.Since(), timeline.Baseline)
	analyse, serr := sc.Inject(r)
	healAll(r)
	phase(r, "recovery", r.Opt.Recovery)
	close(stop)
	wg.Wait()
	r.Timeline.Event("load stopped")
	if serr != nil {
		close(monStop)
		monWg.Wait()
		return serr
	}
	finalReads(r, bulk)
	close(monStop)
	monWg.Wait()
	common(r)
	if analyse != nil {
		analyse()
	}
	return nil
}

// phase logs a phase and waits it out.
func phase(r *experiment.Run, name string, d time.Duration) {
	r.Timeline.Event(name)
	time.Sleep(d)
}

// healAll lifts every fault: links, CPU limits, stopped and dead servers.
func healAll(r *experiment.Run) {
	for i := range r.Procs.Addrs {
		if r.Procs.Retired(i) {
			continue
		}
		if err := r.Procs.Links.Heal(i); err != nil {
			r.Logf("heal links of %d: %v", i, err)
		}
		if pid := r.Procs.Pid(i); pid != 0 {
			if err := r.CPU.Unlimit(pid); err != nil {
				r.Logf("lift the CPU limit of %d: %v", i, err)
			}
			_ = r.Procs.Signal(i, syscall.SIGCONT)
			continue
		}
		if err := r.Procs.Start(i); err != nil {
			r.Logf("restart %d: %v", i, err)
		}
	}
	r.Timeline.Event("healed")
}

// progress prints a line every second.
func progress(r *experiment.Run, stop <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		snap := r.Timeline.Snapshot()
		secs, evs := snap.Seconds, snap.Events
		last := int(r.Timeline.Since()/time.Second) - 1
		if last < 0 || last >= len(secs) {
			continue
		}
		s := secs[last]
		vs := monitor.Views(r.Monitor.Samples(), 0)
		leader, term := -1, uint64(0)
		if len(vs) > 0 {
			leader, term = vs[len(vs)-1].Leader, vs[len(vs)-1].Term
		}
		phase := ""
		if len(evs) > 0 {
			phase = evs[len(evs)-1].What
		}
		r.Logf("%-22s ops/s %9d  failed %6d  p99 %8v  checked ops/s %5d  shard 0 leader %2d term %d  violations %d",
			phase, s.Ops, s.Failed, s.Lat.Quantile(0.99).Round(10*time.Microsecond), s.Checked, leader, term, r.Violations.Count())
	}
}

// finalReads reads every key after the load: the checked keys go into
// the history, the bulk keys are checked against their writers.
func finalReads(r *experiment.Run, bulk *load.Bulk) {
	cl, err := newClient(r, 5*time.Second)
	if err != nil {
		r.Violations.Add(fmt.Sprintf("final reads: %v", err))
		return
	}
	defer func() { _ = cl.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), r.Opt.FinalReads)
	defer cancel()
	n, err := bulk.FinalCheck(ctx, cl)
	if err != nil {
		r.Violations.Add(err.Error())
	}
	keys := append(load.CheckedKeys(r.Opt.Checked.Keys), r.Probe.Keys...)
	for _, k := range keys {
		ops := load.FinalGet(k)
		call := r.History.Now()
		res, err := cl.Do(ctx, ops)
		r.History.Record(load.FinalClient, ops, res, err, call, r.History.Now())
		if err != nil {
			r.Violations.Add(fmt.Sprintf("final read %s: %v", k, err))
		}
	}
	r.Logf("final reads: %d bulk keys and %d checked keys", n, len(keys))
}
