package raftstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/internal/bugswitch"
)

// checkedData returns entry i's data: n bytes that name it, so that a
// test can find the entry in the log's files.
func checkedData(i uint64, n int) []byte {
	tag := fmt.Sprintf("<entry %06d>", i)
	return []byte(strings.Repeat(tag, n/len(tag)+1)[:n])
}

// storeChecked appends entries from..to to s, 100 to a batch, every
// third with extensions of its own.
func storeChecked(t *testing.T, s Store, from, to uint64, size int) {
	t.Helper()
	var batch []*raft.Log
	for i := from; i <= to; i++ {
		l := &raft.Log{Index: i, Term: 3, Type: raft.LogCommand, Data: checkedData(i, size)}
		if i%3 == 0 {
			l.Extensions = []byte("own extensions")
		}
		batch = append(batch, l)
		if len(batch) == 100 || i == to {
			require.NoError(t, s.StoreLogs(batch))
			for _, l := range batch {
				require.Equal(t, checkedData(l.Index, size), l.Data, "StoreLogs changed the caller's entry")
				require.False(t, bytes.HasPrefix(l.Extensions, []byte{checksumTag}), "StoreLogs changed the caller's entry")
			}
			batch = batch[:0]
		}
	}
}

// flipEntry inverts 64 bytes in the middle of entry i's data, in
// whichever file under dir holds it, and returns that file.
func flipEntry(t *testing.T, dir string, i uint64) string {
	t.Helper()
	tag := checkedData(i, len(checkedData(i, 16)))
	var found string
	require.NoError(t, filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || found != "" {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		at := bytes.Index(raw, tag)
		if at < 0 {
			return nil
		}
		at += 2000
		for k := at; k < at+64; k++ {
			raw[k] ^= 0xff
		}
		found = path
		return os.WriteFile(path, raw, info.Mode())
	}))
	require.NotEmpty(t, found, "entry %d not found under %s", i, dir)
	return found
}

// TestCheckedLogFindsFlippedBytes: in each log format, entries read back
// as they were stored (data and extensions), and 64 bytes inverted in one
// entry's data on disk (for a WAL: in a sealed segment, and in the
// segment being written) are found when the log is next read, naming the
// file and the entry; the log with its checks skipped (the planted bug)
// replays the damaged entry as if it were sound.
func TestCheckedLogFindsFlippedBytes(t *testing.T) {
	const size = 9000
	for _, c := range []struct {
		name    string
		format  LogFormat
		entries uint64 // over 16 MiB makes a WAL seal its first segment
		damaged uint64
		file    string
	}{
		{"wal-sealed-segment", LogWAL, 2200, 50, "00000000000000000001-0000000000000000.wal"},
		// Not in the last batch: raft-wal takes a last batch that fails
		// its own CRC for a torn write, and drops it.
		{"wal-tail-segment", LogWAL, 2200, 2050, "-0000000000000001.wal"},
		{"wal-only-segment", LogWAL, 300, 150, "00000000000000000001-0000000000000000.wal"},
		// raft-wal drops a last batch that fails its CRC; checkWALTail
		// finds it was written whole.
		{"wal-last-batch", LogWAL, 300, 250, "00000000000000000001-0000000000000000.wal"},
		{"bolt", LogBolt, 300, 150, boltLogName},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			open := func() *checkedLog {
				s, err := openCheckedLog(dir, c.format, true, hclog.NewNullLogger())
				require.NoError(t, err)
				return s
			}
			s := open()
			storeChecked(t, s, 1, c.entries, size)
			require.NoError(t, Close(s))

			s = open()
			require.NoError(t, checkReplicaData(dir, s, nil))
			for _, i := range []uint64{1, 3, c.damaged, c.entries} {
				var l raft.Log
				require.NoError(t, s.GetLog(i, &l))
				require.Equal(t, checkedData(i, size), l.Data)
				if i%3 == 0 {
					require.Equal(t, []byte("own extensions"), l.Extensions)
				} else {
					require.Nil(t, l.Extensions)
				}
			}
			require.NoError(t, Close(s))

			file := flipEntry(t, dir, c.damaged)
			require.True(t, strings.HasSuffix(file, c.file), "entry %d in %s", c.damaged, file)
			s = open()
			defer func() { require.NoError(t, Close(s)) }()
			err := checkReplicaData(dir, s, nil)
			var ce *CorruptError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, file, ce.File)
			require.ErrorIs(t, err, ErrCorrupt)
			if c.name == "wal-last-batch" {
				require.Equal(t, uint64(201), ce.Index, "the last batch, 201-300, was dropped")
				bugswitch.UncheckedData.Store(true)
				defer bugswitch.UncheckedData.Store(false)
				require.NoError(t, checkReplicaData(dir, s, nil))
				last, err := s.LastIndex()
				require.NoError(t, err)
				require.Equal(t, uint64(200), last, "unchecked, the log lost its last batch")
				return
			}
			require.Equal(t, c.damaged, ce.Index)

			// A read while the replica runs reports the damage too.
			var reported []error
			s.setOnCorrupt(func(err error) { reported = append(reported, err) })
			var l raft.Log
			require.ErrorIs(t, s.GetLog(c.damaged, &l), ErrCorrupt)
			require.ErrorIs(t, s.GetLog(c.damaged, &l), ErrCorrupt)
			require.Len(t, reported, 1, "damage is reported once")

			// The planted bug: the same log, unchecked, replays the
			// damaged entry.
			bugswitch.UncheckedData.Store(true)
			defer bugswitch.UncheckedData.Store(false)
			require.NoError(t, checkReplicaData(dir, s, nil))
			require.NoError(t, s.GetLog(c.damaged, &l))
			require.NotEqual(t, checkedData(c.damaged, size), l.Data)
		})
	}
}

// TestCheckedLogOpensLegacyLogs: a log written before checksums opens,
// its entries unchecked; the mark that every entry is checked appears
// once those entries have been trimmed, after which an entry without a
// checksum is damage.
func TestCheckedLogOpensLegacyLogs(t *testing.T) {
	dir := t.TempDir()
	raw, err := openLogStore(dir, LogWAL, true, hclog.NewNullLogger())
	require.NoError(t, err)
	storeChecked(t, raw, 1, 10, 100)
	require.NoError(t, Close(raw))

	s, err := openCheckedLog(dir, LogWAL, true, hclog.NewNullLogger())
	require.NoError(t, err)
	require.True(t, s.legacy)
	storeChecked(t, s, 11, 20, 100)
	require.NoError(t, checkReplicaData(dir, s, nil))
	require.True(t, s.legacy)
	require.NoFileExists(t, filepath.Join(dir, checksumsMark))
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, snapshotsRetained, hclog.NewNullLogger())
	require.NoError(t, err)
	sink, err := snaps.Create(raft.SnapshotVersionMax, 10, 3, raft.Configuration{}, 1, nil)
	require.NoError(t, err)
	require.NoError(t, sink.Close())
	require.NoError(t, s.DeleteRange(1, 10))
	require.NoError(t, checkReplicaData(dir, s, snaps))
	require.FileExists(t, filepath.Join(dir, checksumsMark))
	require.False(t, s.legacy)
	// An entry without a checksum in a marked log is damage.
	require.NoError(t, s.Store.StoreLogs([]*raft.Log{{Index: 21, Term: 3, Data: []byte("unchecked")}}))
	var l raft.Log
	require.ErrorIs(t, s.GetLog(21, &l), ErrCorrupt)
	require.NoError(t, Close(s))
}

// TestCheckReplicaDataFindsDamagedSnapshots: a snapshot whose state file
// has flipped bytes, or whose metadata does not read, is damage (Raft
// would skip it for an older snapshot, whose log has been trimmed); so is
// a log that starts after the latest snapshot ends. The planted bug
// (checks skipped) lets the damaged snapshot through.
func TestCheckReplicaDataFindsDamagedSnapshots(t *testing.T) {
	setup := func(t *testing.T) (string, *checkedLog, raft.SnapshotStore, string) {
		dir := t.TempDir()
		s, err := openCheckedLog(dir, LogWAL, true, hclog.NewNullLogger())
		require.NoError(t, err)
		t.Cleanup(func() { _ = Close(s) })
		storeChecked(t, s, 1, 40, 100)
		snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, snapshotsRetained, hclog.NewNullLogger())
		require.NoError(t, err)
		var id string
		for _, index := range []uint64{10, 30} {
			sink, err := snaps.Create(raft.SnapshotVersionMax, index, 3, raft.Configuration{}, 1, nil)
			require.NoError(t, err)
			_, err = sink.Write(checkedData(index, 5000))
			require.NoError(t, err)
			require.NoError(t, sink.Close())
			id = sink.ID()
		}
		require.NoError(t, s.DeleteRange(1, 20)) // the older snapshot's log is gone
		require.NoError(t, checkReplicaData(dir, s, snaps))
		return dir, s, snaps, filepath.Join(dir, snapshotsDir, id)
	}
	t.Run("state", func(t *testing.T) {
		dir, s, snaps, latest := setup(t)
		flipEntry(t, latest, 30)
		err := checkReplicaData(dir, s, snaps)
		var ce *CorruptError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, filepath.Join(latest, "state.bin"), ce.File)
		bugswitch.UncheckedData.Store(true)
		defer bugswitch.UncheckedData.Store(false)
		require.NoError(t, checkReplicaData(dir, s, snaps))
	})
	t.Run("meta", func(t *testing.T) {
		dir, s, snaps, latest := setup(t)
		require.NoError(t, os.WriteFile(filepath.Join(latest, "meta.json"), []byte(`{"ID": 7`), 0o600))
		err := checkReplicaData(dir, s, snaps)
		var ce *CorruptError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, filepath.Join(latest, "meta.json"), ce.File)
	})
	t.Run("newest meta lost", func(t *testing.T) {
		dir, s, snaps, latest := setup(t)
		require.NoError(t, os.Remove(filepath.Join(latest, "meta.json")))
		err := checkReplicaData(dir, s, snaps)
		var ce *CorruptError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, filepath.Join(latest, "meta.json"), ce.File)
		require.DirExists(t, latest)
	})
	// A crash while Raft removed an old snapshot (file by file) leaves it
	// without its metadata: not damage, since a newer snapshot reads; the
	// check finishes the removal. It was found by a server killed under
	// go test ./..., which then wiped its replica as damaged.
	t.Run("old snapshot half removed", func(t *testing.T) {
		dir, s, snaps, latest := setup(t)
		entries, err := os.ReadDir(filepath.Join(dir, snapshotsDir))
		require.NoError(t, err)
		require.Len(t, entries, 2)
		var older string
		for _, e := range entries {
			if p := filepath.Join(dir, snapshotsDir, e.Name()); p != latest {
				older = p
			}
		}
		require.NoError(t, os.Remove(filepath.Join(older, "meta.json")))
		require.NoError(t, checkReplicaData(dir, s, snaps))
		require.NoDirExists(t, older)
		require.DirExists(t, latest)
	})
	// A crash while a snapshot was written leaves <id>.tmp, which Raft
	// never lists nor removes: the check removes it.
	t.Run("half written", func(t *testing.T) {
		dir, s, snaps, latest := setup(t)
		tmp := filepath.Join(dir, snapshotsDir, "3-40-1795973024980.tmp")
		require.NoError(t, os.MkdirAll(tmp, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(tmp, "state.bin"), make([]byte, 4096), 0o600))
		require.NoError(t, checkReplicaData(dir, s, snaps))
		require.NoDirExists(t, tmp)
		require.DirExists(t, latest)
	})
	t.Run("gap", func(t *testing.T) {
		dir, s, snaps, latest := setup(t)
		require.NoError(t, os.RemoveAll(latest))
		err := checkReplicaData(dir, s, snaps)
		var ce *CorruptError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, uint64(21), ce.Index)
		require.True(t, errors.Is(err, ErrCorrupt))
	})
}
