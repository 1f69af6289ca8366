package raftstore

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/internal/powercut"
	"github.com/batchkv/batchkv/kvs/replica/durablefs"
)

// The tests below cut the power (internal/powercut, strict POSIX mode: a
// file's fsync does not save its name) after each durable step of a
// replica, and check what survives. Each pairs the real step with the
// step as it was before (no directory sync), which the same check must
// catch: that shows the check can fail and that the fix matters.

func cutPower(t *testing.T, fs *powercut.ChildFS) {
	t.Helper()
	rep, err := fs.Cut()
	require.NoError(t, err)
	t.Logf("cut: %s", rep)
}

// TestPowerCutKeepsTermAndVote opens a new replica's log store in a data
// dir that does not exist yet, records a term, cuts the power, and
// reopens it: the term must be there, in both formats, with and without
// -unsafe-nosync.
func TestPowerCutKeepsTermAndVote(t *testing.T) {
	for _, format := range []LogFormat{LogWAL, LogBolt} {
		for _, noSync := range []bool{false, true} {
			name := string(format)
			if noSync {
				name += "/unsafe-nosync"
			}
			t.Run(name, func(t *testing.T) {
				fs := powercut.MountForTest(t, powercut.Strict)
				cfg := Config{Shard: 0, Dir: filepath.Join(fs.Dir(), "data", "shard-0"), NoSync: noSync, Format: format}
				logs, snaps, err := Open(cfg)
				require.NoError(t, err)
				require.NotNil(t, snaps)
				require.NoError(t, logs.SetUint64([]byte("CurrentTerm"), 7))
				require.NoError(t, Close(logs))
				cutPower(t, fs)
				logs, _, err = Open(cfg)
				require.NoError(t, err)
				defer func() { _ = Close(logs) }()
				term, err := logs.GetUint64([]byte("CurrentTerm"))
				require.NoError(t, err)
				require.Equal(t, uint64(7), term, "the term is lost after a power cut")
			})
		}
	}
}

// TestPowerCutKeepsSnapshot writes a snapshot through the replica's
// snapshot store, cuts the power, and reads it back. Raft's own file
// store (the planted case) never syncs the snapshot's directory, so the
// snapshot is gone after a cut on a strict POSIX filesystem.
func TestPowerCutKeepsSnapshot(t *testing.T) {
	for _, c := range []struct {
		name  string
		open  func(base string) (raft.SnapshotStore, error)
		keeps bool
	}{
		{"durableSnapshots", func(base string) (raft.SnapshotStore, error) {
			return openSnapshots(base, snapshotsRetained, hclog.NewNullLogger())
		}, true},
		{"planted: raft.FileSnapshotStore alone", func(base string) (raft.SnapshotStore, error) {
			if err := durablefs.MkdirAllDurable(filepath.Join(base, "snapshots"), DataDirMode); err != nil {
				return nil, err
			}
			return raft.NewFileSnapshotStoreWithLogger(base, snapshotsRetained, hclog.NewNullLogger())
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := powercut.MountForTest(t, powercut.Strict)
			base := filepath.Join(fs.Dir(), "data", "shard-0")
			require.NoError(t, durablefs.MkdirAllDurable(base, DataDirMode))
			store, err := c.open(base)
			require.NoError(t, err)
			payload := bytes.Repeat([]byte("snapshot "), 1000)
			sink, err := store.Create(raft.SnapshotVersionMax, 10, 2, raft.Configuration{}, 1, nil)
			require.NoError(t, err)
			_, err = sink.Write(payload)
			require.NoError(t, err)
			require.NoError(t, sink.Close())
			cutPower(t, fs)
			store, err = c.open(base)
			require.NoError(t, err)
			list, err := store.List()
			require.NoError(t, err)
			if !c.keeps {
				require.Empty(t, list, "the check missed a snapshot whose directory was never synced")
				return
			}
			require.Len(t, list, 1, "the snapshot is gone after a power cut")
			_, rc, err := store.Open(list[0].ID)
			require.NoError(t, err)
			defer rc.Close()
			got, err := io.ReadAll(rc)
			require.NoError(t, err)
			require.Equal(t, payload, got)
		})
	}
}
