// Package experiment holds what a chaos scenario acts on during one run:
// the run's options, its server processes, the shard layout, the
// timeline, the status monitor, the failover probe and pinned clients,
// the CPU limiter and the verdict; and the helpers every scenario uses
// (the current leader, a spare server, the membership driver, throughput
// checks). The scenarios live in packages of their own (chaos/faults,
// chaos/moves, chaos/diskfull, chaos/powercuts); package chaos runs them.
package experiment

import (
	"sync"
	"sync/atomic"

	"github.com/batchkv/batchkv/chaos/cpulimit"
	"github.com/batchkv/batchkv/chaos/load"
	"github.com/batchkv/batchkv/chaos/monitor"
	"github.com/batchkv/batchkv/chaos/procs"
	"github.com/batchkv/batchkv/chaos/timeline"
	"github.com/batchkv/batchkv/chaos/verdict"
	"github.com/batchkv/batchkv/internal/linz"
	"github.com/batchkv/batchkv/membership"
	"github.com/batchkv/batchkv/shard"
)

// Scenario is one fault experiment.
type Scenario struct {
	// About describes it in a line.
	About string
	// Inject injects its faults while the loads run, and returns what to
	// analyse once the run is over (checks and figures on r.Result).
	Inject func(r *Run) (analyse func(), err error)
	// Defaults, if set, adapts the default options to the scenario (more
	// shards, a spare server, longer faults).
	Defaults func(o *Options)
	// SmallDisks, if set, mounts a tmpfs of that many bytes on every
	// server's data dir, so that the scenario can fill one.
	SmallDisks int64
}

// Run is the state of one run. Package chaos fills it in before the
// scenario's Inject is called.
type Run struct {
	Opt Options
	// Procs are the server processes; Layout places the shards on the
	// members they started with.
	Procs  *procs.Servers
	Layout *shard.Layout
	// Timeline counts the run's seconds and keeps its events and fault
	// windows; History holds every checked op, for porcupine.
	Timeline *timeline.Timeline
	History  *linz.History
	// Monitor polls every server's view of its shards.
	Monitor *monitor.Monitor
	// Bulk is the throughput load (a scenario may pace it: Bulk.Pace).
	Bulk *load.Bulk
	// Probe times failovers; Pins[i] is the client pinned to server i.
	Probe *load.Probe
	Pins  []*load.Pinned
	CPU   cpulimit.Limiter
	// Violations are what the bulk load's and the final reads' checks
	// found.
	Violations load.Violations
	Result     verdict.Result
	// Logf prints a progress line (a no-op without Opt.Progress).
	Logf func(format string, args ...any)

	// drv changes the cluster's membership (see Driver).
	drv     *membership.Driver
	drvOnce sync.Once
	// onStep, if set, sees every step the driver reports.
	onStep atomic.Pointer[func(string)]
}
