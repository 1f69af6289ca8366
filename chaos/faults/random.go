package faults

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"time"

	"github.com/batchkv/batchkv/chaos/experiment"
)

// randomFault is one fault of the random scenario.
type randomFault struct {
	name  string
	apply func(r *experiment.Run, leader, follower int) (heal func() error, err error)
}

var randomFaults = []randomFault{
	{"kill the leader", func(r *experiment.Run, l, _ int) (func() error, error) {
		return func() error { return r.Procs.Start(l) }, r.Procs.Kill(l)
	}},
	{"kill a follower", func(r *experiment.Run, _, f int) (func() error, error) {
		return func() error { return r.Procs.Start(f) }, r.Procs.Kill(f)
	}},
	{"pause the leader", func(r *experiment.Run, l, _ int) (func() error, error) {
		return func() error { return r.Procs.Signal(l, syscall.SIGCONT) }, r.Procs.Signal(l, syscall.SIGSTOP)
	}},
	{"isolate the leader", func(r *experiment.Run, l, _ int) (func() error, error) {
		return func() error { return r.Procs.Links.Isolate(l, false) }, r.Procs.Links.Isolate(l, true)
	}},
	{"mute the leader (one-way)", func(r *experiment.Run, l, _ int) (func() error, error) {
		return func() error { return r.Procs.Links.Mute(l, false) }, r.Procs.Links.Mute(l, true)
	}},
	{"isolate a follower", func(r *experiment.Run, _, f int) (func() error, error) {
		return func() error { return r.Procs.Links.Isolate(f, false) }, r.Procs.Links.Isolate(f, true)
	}},
	{"+100ms on the leader's links", func(r *experiment.Run, l, _ int) (func() error, error) {
		return func() error { return r.Procs.Links.SetLatency(l, 0) }, r.Procs.Links.SetLatency(l, 100*time.Millisecond)
	}},
	{"starve a follower's CPU", func(r *experiment.Run, _, f int) (func() error, error) {
		pid := r.Procs.Pid(f)
		return func() error { return r.CPU.Unlimit(pid) }, r.CPU.Limit(pid, r.Opt.CPUFraction)
	}},
}

// random injects a random fault every Opt.Interval, healed before the
// next, for the fault's length (Jepsen's shape); with a spare server, a
// move of a replica to it is one of the faults.
func random(r *experiment.Run) (func(), error) {
	rng := rand.New(rand.NewPCG(r.Opt.Seed, 7))
	hold := max(r.Opt.Interval-time.Second, r.Opt.Interval/2)
	counts := map[string]int{}
	faults := randomFaults
	if r.Opt.Spares > 0 {
		spare, err := r.StartSpare()
		if err != nil {
			return nil, err
		}
		if err := r.Driver().AddMember(r.Procs.Addrs[spare]); err != nil {
			return nil, err
		}
		faults = append(slices.Clone(faults), randomFault{"move a follower's replica to the spare, and back", moveToSpare})
	}
	end := r.Timeline.Since() + r.Opt.Fault
	for r.Timeline.Since() < end {
		l := r.LeaderNow(0)
		if l < 0 {
			l = rng.IntN(r.Opt.Servers)
		}
		f := r.Follower(l)
		fault := faults[rng.IntN(len(faults))]
		counts[fault.name]++
		from := r.Timeline.Event(fmt.Sprintf("%s (leader %d, follower %d)", fault.name, l, f))
		heal, err := fault.apply(r, l, f)
		if err != nil {
			return nil, fmt.Errorf("chaos: %s: %w", fault.name, err)
		}
		time.Sleep(hold)
		if err := heal(); err != nil {
			return nil, fmt.Errorf("chaos: heal %s: %w", fault.name, err)
		}
		r.Timeline.Window(from, r.Timeline.Event("healed: "+fault.name), fault.name)
		time.Sleep(r.Opt.Interval - hold)
	}
	return func() {
		for _, f := range faults {
			r.Figure("injected: "+f.name, "%d times", counts[f.name])
		}
	}, nil
}

// moveToSpare is the random scenario's move: a follower's replica of
// shard 0 goes to the spare, and comes back when healed.
func moveToSpare(r *experiment.Run, _, f int) (func() error, error) {
	drv, spare := r.Driver(), r.Procs.Addrs[r.Opt.Servers]
	if _, _, err := drv.Move(0, r.Procs.Addrs[f], spare); err != nil {
		return nil, err
	}
	return func() error {
		_, _, err := drv.Move(0, spare, r.Procs.Addrs[f])
		return err
	}, nil
}
