// Package logbound keeps each Raft group's log on disk within its share
// of a server's bound on log bytes. hashicorp/raft bounds a log by
// entries only: a snapshot once SnapshotThreshold entries follow the last
// one, then TrailingLogs entries kept. With entries near 1 MiB (a group
// commit of 4 KiB values) the defaults keep up to 18 GB of log a shard,
// and a server's disk fills with log while its store is small. Every
// second a group's Tuner sets both counts (raft's ReloadConfig) from the
// mean size of the entries it stores, so that each keeps a quarter of
// the group's share, never more entries than the defaults, and, while
// that binds, snapshots the group once its log reaches the threshold.
// The other half of the share is for the entries that come while a
// snapshot is written (a paced snapshot of a 136 MB store takes about
// 5 s, while the log of 4 KiB writes grows 25-30 MB a second a shard).
//
//	b, err := logbound.ForDir(dir, logbound.Auto)
//	t := logbound.NewTuner(b, logbound.Defaults(cfg), logbound.OfRaft(r, cache.Stored, log))
//	go t.Run(stop)
package logbound

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
)

// Budget is a server's bound on the bytes its groups' Raft logs keep,
// shared equally among the groups that run.
type Budget struct {
	limit  int64
	groups atomic.Int64
	// snapshotting is held by the Tuner whose snapshot is being taken:
	// one at a time on a server, as each holds a frozen view of its store
	// whose overwritten records count against the stores' memory until
	// the snapshot is written.
	snapshotting sync.Mutex
}

// NewBudget returns a budget of limit bytes; 0 or less is no bound.
func NewBudget(limit int64) *Budget { return &Budget{limit: limit} }

// Limit returns the budget's bound (0: none).
func (b *Budget) Limit() int64 {
	if b == nil {
		return 0
	}
	return max(b.limit, 0)
}

// MinShare is the least a group's share may be, however many groups
// share the budget: two of raftstore's 16 MiB WAL segments, as raft-wal
// frees a log's space a whole segment at a time and makes each new
// segment whole at once. A smaller share would snapshot every second and
// free nothing.
const MinShare = 32 << 20

// Share returns what each group's log may keep now (0: no bound), at
// least MinShare.
func (b *Budget) Share() int64 {
	if b.Limit() == 0 {
		return 0
	}
	return max(b.limit/max(b.groups.Load(), 1), MinShare)
}

// MinEntries is the fewest entries a group keeps after a snapshot, and
// the fewest between snapshots, however large its entries (unless its
// own counts are fewer).
const MinEntries = 16

// checkEvery is how often a Tuner looks at the entries stored and at
// its group's log since the last snapshot.
const checkEvery = time.Second

// Bounds returns def (the group's own counts and timeouts) with its
// trailing entries and snapshot threshold each set to a quarter of share
// bytes of entries of meanEntry bytes, at least MinEntries and at most
// def's. A share or mean of 0 leaves def.
func Bounds(def raft.ReloadableConfig, share int64, meanEntry float64) raft.ReloadableConfig {
	if share <= 0 || meanEntry <= 0 {
		return def
	}
	n := uint64(max(float64(share)/4/meanEntry, MinEntries))
	out := def
	out.TrailingLogs = min(def.TrailingLogs, n)
	out.SnapshotThreshold = min(def.SnapshotThreshold, n)
	return out
}

// Group is what a Tuner needs of its Raft group.
type Group struct {
	// Stored returns the entries the group's log has stored since it
	// started, and their bytes.
	Stored func() (entries, bytes int64)
	// Reload gives raft new bounds (raft.Raft.ReloadConfig).
	Reload func(raft.ReloadableConfig) error
	// SinceSnapshot returns how many applied entries follow the last
	// snapshot.
	SinceSnapshot func() uint64
	// Snapshot takes a snapshot now, and then trims the log to its
	// trailing entries (raft.Raft.Snapshot).
	Snapshot func() error
	// Log is told when raft refuses new bounds or a snapshot fails.
	Log *slog.Logger
}

// OfRaft returns the Group of r, whose log stored what stored returns,
// logging to log.
func OfRaft(r *raft.Raft, stored func() (int64, int64), log *slog.Logger) Group {
	return Group{Stored: stored, Reload: r.ReloadConfig, Log: log,
		SinceSnapshot: func() uint64 {
			last, err := strconv.ParseUint(r.Stats()["last_snapshot_index"], 10, 64)
			if applied := r.AppliedIndex(); err == nil && applied > last {
				return applied - last
			}
			return 0
		},
		Snapshot: func() error { return r.Snapshot().Error() }}
}

// Defaults returns the bounds of c that a Tuner changes, and those that
// must go with them (raft.Raft.ReloadConfig sets all of them).
func Defaults(c *raft.Config) raft.ReloadableConfig {
	return raft.ReloadableConfig{TrailingLogs: c.TrailingLogs, SnapshotInterval: c.SnapshotInterval,
		SnapshotThreshold: c.SnapshotThreshold, HeartbeatTimeout: c.HeartbeatTimeout, ElectionTimeout: c.ElectionTimeout}
}

// Tuner sets one group's log bounds from the entries it stores, and
// snapshots the group once its log is past them: raft itself looks only
// every SnapshotInterval (10-20 s by default), in which a log of large
// entries can outgrow its share many times over.
type Tuner struct {
	budget *Budget
	def    raft.ReloadableConfig
	group  Group

	entries, bytes int64   // at the last look
	mean           float64 // of the entries stored, smoothed
	set            raft.ReloadableConfig
	refused        bool          // raft refused the last bounds (logged once)
	backoff        time.Duration // after a failed snapshot, doubled each time
	retryAt        time.Time     // no snapshot before this
}

// NewTuner returns the tuner of group, whose own bounds are def. It
// counts the group in budget's share until Run ends.
func NewTuner(budget *Budget, def raft.ReloadableConfig, group Group) *Tuner {
	budget.groups.Add(1)
	return &Tuner{budget: budget, def: def, group: group, set: def}
}

// Run steps every second until stop is closed; then it takes the group
// out of the budget's share.
func (t *Tuner) Run(stop <-chan struct{}) {
	defer t.budget.groups.Add(-1)
	tick := time.NewTicker(checkEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			t.Step()
		}
	}
}

// Step looks at what was stored since the last Step, sets the bounds
// that calls for when they differ from those set, and, while the bound
// binds, snapshots the group when its log since the last snapshot is
// past the threshold.
func (t *Tuner) Step() {
	entries, bytes := t.group.Stored()
	if n := entries - t.entries; n > 0 {
		m := float64(bytes-t.bytes) / float64(n)
		if t.mean == 0 {
			t.mean = m
		} else {
			t.mean = (t.mean + m) / 2
		}
	}
	t.entries, t.bytes = entries, bytes
	want := Bounds(t.def, t.budget.Share(), t.mean)
	if want != t.set {
		if err := t.group.Reload(want); err != nil {
			if !t.refused {
				t.group.Log.Warn("raft refused the Raft log's bounds; it keeps the ones before", "err", err)
			}
			t.refused = true
		} else {
			t.set, t.refused = want, false
		}
	}
	if t.set.SnapshotThreshold >= t.def.SnapshotThreshold || time.Now().Before(t.retryAt) ||
		t.group.SinceSnapshot() < t.set.SnapshotThreshold {
		return
	}
	if !t.budget.snapshotting.TryLock() {
		return // another group's snapshot first; this one at a later step
	}
	err := t.group.Snapshot()
	t.budget.snapshotting.Unlock()
	if err != nil {
		// A full disk, say: raft's own check tries again too.
		t.backoff = min(max(2*t.backoff, checkEvery), maxBackoff)
		t.retryAt = time.Now().Add(t.backoff)
		t.group.Log.Warn("snapshot for the Raft log's bound failed", "err", err, "next_try_in", t.backoff)
		return
	}
	t.backoff = 0
}

// maxBackoff bounds the wait between a Tuner's tries after failed
// snapshots.
const maxBackoff = 30 * time.Second

// Auto as a bound (ForDir) is a quarter of the data dir's file system.
const Auto = -1

// ForDir returns the budget of a server whose logs are in dir, of n bytes,
// or a quarter of dir's file system when n is Auto; nil when n is 0 or
// dir is "" (logs kept in memory); an error when n is below Auto.
func ForDir(dir string, n int64) (*Budget, error) {
	if n == 0 || dir == "" {
		return nil, nil
	}
	if n < Auto {
		return nil, fmt.Errorf("a bound of %d bytes on the Raft logs", n)
	}
	if n == Auto {
		q, err := Quarter(dir)
		if err != nil {
			return nil, fmt.Errorf("the Raft logs' bound from %s: %w", dir, err)
		}
		n = q
	}
	return NewBudget(n), nil
}

// Quarter returns a quarter of the size of the file system that holds
// dir, or of dir's nearest parent that exists (dir is made later).
func Quarter(dir string) (int64, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return 0, err
	}
	for {
		var st syscall.Statfs_t
		err := syscall.Statfs(dir, &st)
		if err == nil {
			return int64(st.Blocks) * st.Frsize / 4, nil
		}
		parent := filepath.Dir(dir)
		if !os.IsNotExist(err) || parent == dir {
			return 0, err
		}
		dir = parent
	}
}
