package experiment

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/batchkv/batchkv/chaos/load"
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

	CPUFraction float64 // slow-follower: share of one CPU
	// ServerCPU is the share of one CPU each server gets for the whole
	// run (0: no limit), as a slower machine would give it.
	ServerCPU float64
	Latencies []time.Duration // slow-network: added latencies, in turn
	Lag       time.Duration   // slow-network: how long a follower is stopped
	Restart   time.Duration   // crash-*: delay before the restart
	Pause     time.Duration   // pause: how long the leader is stopped
	Interval  time.Duration   // random: time between faults
	// FailoverBound is the time within which a new leader must serve.
	FailoverBound time.Duration

	Bulk    load.BulkConfig
	Checked load.CheckedConfig

	// Progress gets a line every second; nil: none.
	Progress io.Writer
	// CheckTimeout bounds porcupine.
	CheckTimeout time.Duration
	// FinalReads bounds the reads of every key after the load; a key
	// not read by then counts as a violation.
	FinalReads time.Duration
}

// Defaults of a run, before a scenario's own (chaos.DefaultOptions):
// durations that finish within a few minutes.
//
// DefaultWarmup is long because a store starts faster than it runs: under
// the bulk load, the leader's cost per read grows over its first 10-20 s
// as overwrites scatter the records (its profile: more of its time in
// the index's cache misses), from 2.2-2.6M ops/s to 1.5-1.9M on the
// 2-core VM (2026-11-27). With 3 s, the baseline took in the fast start
// and a fault window after it looked a third slower than the store was.
const (
	DefaultServers       = 3
	DefaultShards        = 1
	DefaultWarmup        = 15 * time.Second
	DefaultBaseline      = 15 * time.Second
	DefaultFault         = 10 * time.Second
	DefaultRecovery      = 10 * time.Second
	DefaultCPUFraction   = 0.02 // the Raft seed's 0.02-CPU container
	DefaultLag           = 10 * time.Second
	DefaultRestart       = 5 * time.Second
	DefaultPause         = 5 * time.Second
	DefaultInterval      = 5 * time.Second
	DefaultFailoverBound = 2500 * time.Millisecond
	DefaultCheckTimeout  = 5 * time.Minute
	DefaultFinalReads    = time.Minute
)

// DefaultLatencies returns the latencies slow-network adds, in turn.
func DefaultLatencies() []time.Duration {
	return []time.Duration{100 * time.Millisecond, 250 * time.Millisecond}
}

// DefaultOptions returns the options every scenario starts from, seeded
// from the clock.
func DefaultOptions() Options {
	return Options{
		Servers: DefaultServers, Shards: DefaultShards, Seed: uint64(time.Now().UnixNano()),
		Warmup: DefaultWarmup, Baseline: DefaultBaseline, Fault: DefaultFault, Recovery: DefaultRecovery,
		CPUFraction: DefaultCPUFraction, Latencies: DefaultLatencies(),
		Lag: DefaultLag, Restart: DefaultRestart, Pause: DefaultPause, Interval: DefaultInterval,
		FailoverBound: DefaultFailoverBound,
		Bulk:          load.DefaultBulk(),
		Checked:       load.DefaultChecked(),
		CheckTimeout:  DefaultCheckTimeout,
		FinalReads:    DefaultFinalReads,
	}
}

// Errors of a run's options.
var (
	// ErrBadCluster is a cluster of no server or shard, of negative
	// spares, or an RF larger than its servers.
	ErrBadCluster = errors.New("chaos: bad cluster size")
	// ErrBadDuration is a negative duration, or a zero failover bound,
	// checker timeout or final reads' bound.
	ErrBadDuration = errors.New("chaos: bad duration")
	// ErrBadCPUFraction is a CPU share outside (0, 1].
	ErrBadCPUFraction = errors.New("chaos: bad CPU fraction")
)

// Validate says what is wrong with o, or nil: its errors wrap the ones
// above, load.ErrBadBulk or load.ErrBadChecked.
func (o Options) Validate() error {
	if o.Servers < 1 || o.Shards < 1 || o.Spares < 0 || o.RF < 0 || o.RF > o.Servers {
		return fmt.Errorf("%w: %d servers, %d spares, %d shards, RF %d", ErrBadCluster, o.Servers, o.Spares, o.Shards, o.RF)
	}
	for _, d := range append([]time.Duration{o.Warmup, o.Baseline, o.Fault, o.Recovery, o.Lag, o.Restart, o.Pause, o.Interval},
		o.Latencies...) {
		if d < 0 {
			return fmt.Errorf("%w: %v", ErrBadDuration, d)
		}
	}
	if o.FailoverBound <= 0 || o.CheckTimeout <= 0 || o.FinalReads <= 0 {
		return fmt.Errorf("%w: failover bound %v, checker timeout %v, final reads %v: want more than 0",
			ErrBadDuration, o.FailoverBound, o.CheckTimeout, o.FinalReads)
	}
	if o.CPUFraction <= 0 || o.CPUFraction > 1 {
		return fmt.Errorf("%w: %v: want a share of one CPU in (0, 1]", ErrBadCPUFraction, o.CPUFraction)
	}
	if o.ServerCPU < 0 || o.ServerCPU > 1 {
		return fmt.Errorf("%w: servers' %v: want a share of one CPU in (0, 1], or 0 for none", ErrBadCPUFraction, o.ServerCPU)
	}
	if err := o.Bulk.Validate(); err != nil {
		return err
	}
	return o.Checked.Validate()
}
