// Package powercuts holds the chaos scenarios that cut the power of every
// server's disk at once: every server's data dir is on a filesystem that
// loses what was not fsynced (internal/powercut; kvschaos mounts it and
// passes its Cut as Options.PowerCut); every server is killed at once
// (kill -9, by PID), the power cut, and all started again. The common
// checks then say whether the cut lost an acknowledged write, broke
// linearizability or left the replicas apart. The scenarios differ in what
// runs at the instant of the cut: the load, snapshots, a shard's move, or
// the map change that ends a move.
package powercuts

import (
	"errors"
	"fmt"
	"time"

	"github.com/batchkv/batchkv/chaos/experiment"
	"github.com/batchkv/batchkv/chaos/verdict"
	"github.com/batchkv/batchkv/wire"
)

// Names lists the power-cut scenarios (not part of `all`: they need root
// and FUSE).
var Names = []string{"power-cut", "power-cut-snapshot", "power-cut-move", "power-cut-map"}

// Scenarios returns the scenarios of this package by name.
func Scenarios() map[string]experiment.Scenario {
	return map[string]experiment.Scenario{
		"power-cut": {About: "every server killed at once and the power of their disks cut (unsynced data lost), mid-load",
			Inject: powerCut("load"), Defaults: cutDefaults},
		"power-cut-snapshot": {About: "the power cut mid-load while the replicas snapshot every few entries",
			Inject: powerCut("snapshot"), Defaults: func(o *experiment.Options) {
				cutDefaults(o)
				o.ServerArgs = append(o.ServerArgs, SnapshotArgs...)
			}},
		"power-cut-move": {About: "the power cut while a shard moves to a spare server (the destination catches up)",
			Inject: powerCut("move"), Defaults: moveDefaults},
		"power-cut-map": {About: "the power cut while a move commits its map change (the destination just became a voter)",
			Inject: powerCut("map-change"), Defaults: moveDefaults},
	}
}

// SnapshotArgs make every replica snapshot every few entries.
var SnapshotArgs = []string{"-raft-snapshot-entries", "16", "-raft-trailing-logs", "4", "-raft-snapshot-interval", "200ms"}

// cutDefaults are every power-cut scenario's: the load runs 5 s before
// the cut, and the power stays off 1 s.
func cutDefaults(o *experiment.Options) {
	o.Fault = 5 * time.Second
	o.Restart = time.Second
}

// moveDefaults are those of the scenarios that cut during a move: two
// shards on three of four servers.
func moveDefaults(o *experiment.Options) {
	o.Shards, o.Spares, o.RF = 2, 1, 3
	cutDefaults(o)
}

// powerCut returns the scenario that cuts the power during what.
func powerCut(during string) func(r *experiment.Run) (func(), error) {
	return func(r *experiment.Run) (func(), error) {
		if r.Opt.PowerCut == nil {
			return nil, errors.New("chaos: the power-cut scenarios need a power-cut filesystem under the data dirs (kvschaos mounts one)")
		}
		cutNow := make(chan struct{})
		var moveErr chan error
		switch during {
		case "load", "snapshot":
			time.AfterFunc(r.Opt.Fault, func() { close(cutNow) })
		case "move", "map-change":
			spare, err := r.StartSpare()
			if err != nil {
				return nil, err
			}
			drv := r.Driver()
			if err := drv.AddMember(r.Procs.Addrs[spare]); err != nil {
				return nil, err
			}
			m, err := drv.Map()
			if err != nil {
				return nil, err
			}
			step := "shard 0: " + r.Procs.Addrs[spare] + " added as a learner"
			if during == "map-change" {
				step = "shard 0: " + r.Procs.Addrs[spare] + " is a voter"
			}
			r.WhenStep(step, func() { close(cutNow) })
			moveErr = make(chan error, 1)
			r.Timeline.Event(fmt.Sprintf("move shard 0: %s -> %s", m.Placement[0][1], r.Procs.Addrs[spare]))
			go func() {
				_, _, err := drv.Move(0, m.Placement[0][1], r.Procs.Addrs[spare])
				moveErr <- err
			}()
		}
		select {
		case <-cutNow:
		case <-time.After(r.Opt.Fault + 60*time.Second):
			return nil, fmt.Errorf("chaos: the %s never reached the instant of the cut", during)
		}
		snaps := r.Procs.CountReplicas(func(s wire.ShardStatus) bool { return s.Snapshot > 0 })
		at := r.Timeline.Event("power cut: every server killed")
		r.Procs.KillAll()
		rep, err := r.Opt.PowerCut()
		if err != nil {
			return nil, err
		}
		r.Logf("power cut: %s", rep)
		r.StopWatchingSteps()
		time.Sleep(r.Opt.Restart)
		for i := range r.Procs.Addrs {
			if r.Procs.Pid(i) == 0 && (i < r.Opt.Servers || moveErr != nil) {
				if err := r.Procs.Start(i); err != nil {
					return nil, err
				}
			}
		}
		r.Timeline.Window(at, r.Timeline.Since(), "power off")
		r.Timeline.Event("every server restarted")
		restored := r.Procs.CountReplicas(func(s wire.ShardStatus) bool { return s.Restores > 0 })
		var moveOutcome, tidyErr error
		if moveErr != nil {
			moveOutcome = <-moveErr // it ends or fails on its own
			tidyErr = r.Driver().Reconcile()
			r.Timeline.Event(fmt.Sprintf("reconciled: %v", verdict.OrOK(tidyErr)))
		}
		return func() {
			r.Figure("the cut discarded", "%s", rep)
			r.Figure("replicas with a snapshot before the cut / restored from one after", "%d / %d", snaps, restored)
			if moveErr != nil {
				r.Figure("the move cut short", "%s", verdict.OrOK(moveOutcome))
				r.Check("reconcile after the cut (the map agrees with the groups)", "completes", verdict.OrOK(tidyErr), tidyErr == nil)
			}
		}, nil
	}
}
