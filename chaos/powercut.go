package chaos

import (
	"errors"
	"fmt"
	"time"

	"github.com/batchkv/batchkv/wire"
)

// The power-cut scenarios put every server's data dir on a filesystem
// that loses what was not fsynced (internal/powercut; kvschaos mounts it
// and passes its Cut as Options.PowerCut), kill every server at once
// (kill -9, by PID), cut the power, and start them again. The common
// checks then say whether the cut lost an acknowledged write, broke
// linearizability or left the replicas apart. They differ in what runs at
// the instant of the cut.
var powerCutScenarios = map[string]scenario{
	"power-cut": {"every server killed at once and the power of their disks cut (unsynced data lost), mid-load", powerCut("load")},
	"power-cut-snapshot": {"the power cut mid-load while the replicas snapshot every few entries",
		powerCut("snapshot")},
	"power-cut-move": {"the power cut while a shard moves to a spare server (the destination catches up)",
		powerCut("move")},
	"power-cut-map": {"the power cut while a move commits its map change (the destination just became a voter)",
		powerCut("map-change")},
}

// PowerCutNames returns the power-cut scenarios (not part of `all`: they
// need root and FUSE).
func PowerCutNames() []string {
	return []string{"power-cut", "power-cut-snapshot", "power-cut-move", "power-cut-map"}
}

// IsPowerCut reports whether name is a power-cut scenario.
func IsPowerCut(name string) bool { _, ok := powerCutScenarios[name]; return ok }

func init() {
	for name, sc := range powerCutScenarios {
		scenarios[name] = sc
	}
}

// snapshotArgs make every replica snapshot every few entries.
var snapshotArgs = []string{"-raft-snapshot-entries", "16", "-raft-trailing-logs", "4", "-raft-snapshot-interval", "200ms"}

// powerCut returns the scenario that cuts the power during what.
func powerCut(during string) func(r *run) (func(), error) {
	return func(r *run) (func(), error) {
		if r.opt.PowerCut == nil {
			return nil, errors.New("chaos: the power-cut scenarios need a power-cut filesystem under the data dirs (kvschaos mounts one)")
		}
		cutNow := make(chan struct{})
		var moveErr chan error
		switch during {
		case "load", "snapshot":
			time.AfterFunc(r.opt.Fault, func() { close(cutNow) })
		case "move", "map-change":
			spare, err := r.startSpare()
			if err != nil {
				return nil, err
			}
			drv := r.driver()
			if err := drv.AddMember(r.c.Addrs[spare]); err != nil {
				return nil, err
			}
			m, err := drv.Map()
			if err != nil {
				return nil, err
			}
			step := "shard 0: " + r.c.Addrs[spare] + " added as a learner"
			if during == "map-change" {
				step = "shard 0: " + r.c.Addrs[spare] + " is a voter"
			}
			r.whenStep(step, func() { close(cutNow) })
			moveErr = make(chan error, 1)
			r.tl.event(fmt.Sprintf("move shard 0: %s -> %s", m.Placement[0][1], r.c.Addrs[spare]))
			go func() {
				_, _, err := drv.Move(0, m.Placement[0][1], r.c.Addrs[spare])
				moveErr <- err
			}()
		}
		select {
		case <-cutNow:
		case <-time.After(r.opt.Fault + 60*time.Second):
			return nil, fmt.Errorf("chaos: the %s never reached the instant of the cut", during)
		}
		snaps := r.c.replicas(func(s wire.ShardStatus) bool { return s.Snapshot > 0 })
		at := r.tl.event("power cut: every server killed")
		r.c.KillAll()
		rep, err := r.opt.PowerCut()
		if err != nil {
			return nil, err
		}
		r.logf("power cut: %s", rep)
		r.onStep.Store(nil)
		time.Sleep(r.opt.Restart)
		for i := range r.c.Addrs {
			if r.c.Pid(i) == 0 && (i < r.opt.Servers || moveErr != nil) {
				if err := r.c.Start(i); err != nil {
					return nil, err
				}
			}
		}
		r.tl.window(at, r.tl.since(), "power off")
		r.tl.event("every server restarted")
		restored := r.c.replicas(func(s wire.ShardStatus) bool { return s.Restores > 0 })
		var moveOutcome, tidyErr error
		if moveErr != nil {
			moveOutcome = <-moveErr // it ends or fails on its own
			tidyErr = r.driver().Reconcile()
			r.tl.event(fmt.Sprintf("reconciled: %v", orOK(tidyErr)))
		}
		return func() {
			r.figure("the cut discarded", "%s", rep)
			r.figure("replicas with a snapshot before the cut / restored from one after", "%d / %d", snaps, restored)
			if moveErr != nil {
				r.figure("the move cut short", "%s", orOK(moveOutcome))
				r.check("reconcile after the cut (the map agrees with the groups)", "completes", orOK(tidyErr), tidyErr == nil)
			}
		}, nil
	}
}

// KillAll sends SIGKILL to every running server first and then waits for
// each: all die at (nearly) the same instant, as in a power cut.
func (c *Cluster) KillAll() {
	c.mu.Lock()
	var exits []chan struct{}
	for i, cmd := range c.procs {
		if cmd != nil {
			_ = cmd.Process.Kill()
			exits = append(exits, c.exits[i])
			c.procs[i] = nil
		}
	}
	c.mu.Unlock()
	for _, e := range exits {
		<-e
	}
}

// replicas counts the replicas, over every server that answers, for
// which ok holds.
func (c *Cluster) replicas(ok func(wire.ShardStatus) bool) int {
	n := 0
	for _, a := range c.Addrs {
		st, err := c.Admin.Status(a, wire.StatusRequest{}, time.Second)
		if err != nil {
			continue
		}
		for _, s := range st.Shards {
			if ok(s) {
				n++
			}
		}
	}
	return n
}
