package logbound

import (
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// defaults stands for a group's own counts and timeouts.
var defaults = raft.ReloadableConfig{TrailingLogs: 10240, SnapshotThreshold: 8192, SnapshotInterval: 10 * time.Second,
	HeartbeatTimeout: time.Second, ElectionTimeout: time.Second}

// TestBoundsFollowTheMeanEntry: each count is a quarter of the share
// over the mean entry, at least MinEntries and at most the defaults.
func TestBoundsFollowTheMeanEntry(t *testing.T) {
	got := Bounds(defaults, 128<<20, 1<<20)
	require.Equal(t, uint64(32), got.TrailingLogs)
	require.Equal(t, uint64(32), got.SnapshotThreshold)
	require.Equal(t, defaults.SnapshotInterval, got.SnapshotInterval, "the timings are left as they are")

	require.Equal(t, defaults, Bounds(defaults, 64<<20, 100), "small entries: the defaults bind first")
	got = Bounds(defaults, 64<<20, 16<<20)
	require.Equal(t, uint64(MinEntries), got.TrailingLogs, "entries larger than the share: MinEntries")
	require.Equal(t, defaults, Bounds(defaults, 0, 1<<20), "no share: no bound")
	require.Equal(t, defaults, Bounds(defaults, 64<<20, 0), "nothing stored yet")
}

// fakeGroup records what a Tuner does to its group.
type fakeGroup struct {
	entries, bytes int64
	since          uint64
	reloads        []raft.ReloadableConfig
	snapshots      int
	snapshotErr    error // what Snapshot answers
}

func (f *fakeGroup) group() Group {
	return Group{Stored: func() (int64, int64) { return f.entries, f.bytes },
		Reload:        func(c raft.ReloadableConfig) error { f.reloads = append(f.reloads, c); return nil },
		SinceSnapshot: func() uint64 { return f.since },
		Snapshot: func() error {
			f.snapshots++
			if f.snapshotErr == nil {
				f.since = 0
			}
			return f.snapshotErr
		},
		Log: slog.New(slog.DiscardHandler)}
}

// TestTunerSharesTheBudget: a tuner reloads its group's bounds from the
// entries stored since its last look, from its share of a budget split
// among the groups that run, only when they change; and it snapshots the
// group once the log since the last snapshot reaches the threshold it
// set, and not under the defaults.
func TestTunerSharesTheBudget(t *testing.T) {
	b := NewBudget(128 << 20)
	f := &fakeGroup{since: 100000}
	tu := NewTuner(b, defaults, f.group())
	other := NewTuner(b, defaults, (&fakeGroup{}).group())
	require.Equal(t, int64(64<<20), b.Share())

	tu.Step()
	require.Empty(t, f.reloads, "nothing stored: the defaults stand")
	require.Zero(t, f.snapshots, "under the defaults raft snapshots by itself")
	f.entries, f.bytes, f.since = 100, 100<<20, 15 // 1 MiB entries
	tu.Step()
	require.Len(t, f.reloads, 1)
	require.Equal(t, uint64(16), f.reloads[0].TrailingLogs, "a quarter of a 64 MiB share")
	require.Zero(t, f.snapshots, "15 entries since the last snapshot: below the threshold")
	f.entries, f.bytes, f.since = 200, 200<<20, 16
	tu.Step()
	require.Len(t, f.reloads, 1, "the same bounds are not set again")
	require.Equal(t, 1, f.snapshots, "16 entries since the last snapshot")

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { other.Run(stop); close(done) }()
	close(stop)
	<-done
	require.Equal(t, int64(128<<20), b.Share(), "a group that stopped leaves the budget")
	f.entries, f.bytes = 300, 300<<20
	tu.Step()
	require.Len(t, f.reloads, 2)
	require.Equal(t, uint64(32), f.reloads[1].TrailingLogs, "the whole budget now")
}

// TestTunerBacksOffAFailingSnapshot: a snapshot that fails (a full
// disk, say) is not tried again at every step, but after a wait.
func TestTunerBacksOffAFailingSnapshot(t *testing.T) {
	f := &fakeGroup{entries: 100, bytes: 100 << 20, since: 1000, snapshotErr: errors.New("no space")}
	tu := NewTuner(NewBudget(64<<20), defaults, f.group())
	tu.Step()
	require.Equal(t, 1, f.snapshots)
	tu.Step()
	tu.Step()
	require.Equal(t, 1, f.snapshots, "no new try within the back-off")
	tu.retryAt = time.Now() // the back-off has passed
	f.snapshotErr = nil
	tu.Step()
	require.Equal(t, 2, f.snapshots)
}

// TestOneSnapshotAtATime: while one group's snapshot is being taken, a
// second group of the same server that is past its threshold waits, and
// takes its own at a later step.
func TestOneSnapshotAtATime(t *testing.T) {
	b := NewBudget(128 << 20)
	inFirst, release := make(chan struct{}), make(chan struct{})
	first := &fakeGroup{entries: 100, bytes: 100 << 20, since: 1000}
	g1 := first.group()
	g1.Snapshot = func() error { close(inFirst); <-release; return nil }
	second := &fakeGroup{entries: 100, bytes: 100 << 20, since: 1000}
	t1, t2 := NewTuner(b, defaults, g1), NewTuner(b, defaults, second.group())
	done := make(chan struct{})
	go func() { t1.Step(); close(done) }()
	<-inFirst
	t2.Step()
	require.Zero(t, second.snapshots, "no second snapshot while the first is taken")
	close(release)
	<-done
	t2.Step()
	require.Equal(t, 1, second.snapshots)
}

// TestShareHasAFloor: however many groups share a budget, each may keep
// two WAL segments.
func TestShareHasAFloor(t *testing.T) {
	b := NewBudget(64 << 20)
	for range 8 {
		NewTuner(b, defaults, (&fakeGroup{}).group())
	}
	require.Equal(t, int64(MinShare), b.Share())
}

// TestForDir: 0 and a memory-only server are no bound, Auto a quarter of
// the file system of the data dir (made later), and a negative size an
// error.
func TestForDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not", "made", "yet")
	b, err := ForDir(dir, 0)
	require.NoError(t, err)
	require.Nil(t, b)
	b, err = ForDir("", Auto)
	require.NoError(t, err)
	require.Nil(t, b)
	b, err = ForDir(dir, 1<<30)
	require.NoError(t, err)
	require.Equal(t, int64(1<<30), b.Limit())
	b, err = ForDir(dir, Auto)
	require.NoError(t, err)
	q, err := Quarter(filepath.Dir(filepath.Dir(dir)))
	require.NoError(t, err)
	require.Positive(t, q)
	require.Equal(t, q, b.Limit())
	_, err = ForDir(dir, -2)
	require.Error(t, err)
}
