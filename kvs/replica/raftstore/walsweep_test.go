package raftstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/internal/powercut"
	"github.com/batchkv/batchkv/kvs/replica/durablefs"
	"github.com/batchkv/batchkv/kvs/replica/raftstore/walfiles"
)

// walFiles returns the names in a WAL dir that end in suffix.
func walFiles(t *testing.T, dir, suffix string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), suffix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestWALSweepsDroppedSegments: a segment that a head truncation drops is
// renamed away at once and unlinked by the time the log closes. What a
// stopped sweeper leaves (a *.swept file), and a dropped segment whose
// rename a power cut undid (a *.wal name the WAL's meta no longer
// lists), are both gone after the next open, which holds the same log.
func TestWALSweepsDroppedSegments(t *testing.T) {
	dir := t.TempDir()
	walDir := filepath.Join(dir, walDirName)
	s, err := openLogStore(dir, LogWAL, false, hclog.NewNullLogger())
	require.NoError(t, err)
	storeEntries(t, s, 1, 3000) // 27 MB: two segments
	before := walFiles(t, walDir, ".wal")
	require.Len(t, before, 2)
	require.NoError(t, s.DeleteRange(1, 2500))
	after := walFiles(t, walDir, ".wal")
	require.Equal(t, before[1:], after, "the dropped segment still has its name")
	checkLog(t, s, 2501, 3000)
	require.NoError(t, Close(s))
	require.Empty(t, walFiles(t, walDir, walfiles.SweptSuffix), "the log closed before its dropped segment was unlinked")

	// A sweeper stopped before its unlink, and a rename a power cut undid.
	live, err := os.ReadFile(filepath.Join(walDir, after[0]))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(walDir, before[0]+walfiles.SweptSuffix), live, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(walDir, before[0]), live, 0o600))
	s, err = openLogStore(dir, LogWAL, false, hclog.NewNullLogger())
	require.NoError(t, err)
	require.Empty(t, walFiles(t, walDir, walfiles.SweptSuffix), "a swept segment outlived the open")
	require.Equal(t, after, walFiles(t, walDir, ".wal"), "the undone rename's segment outlived the open")
	checkLog(t, s, 2501, 3000)
	require.NoError(t, Close(s))
}

// TestPowerCutAfterSweep cuts the power (strict POSIX mode) right after a
// head truncation, whether or not the sweeper has unlinked the dropped
// segment yet: the log reopens with the entries it kept, and nothing of
// the dropped segment is left.
func TestPowerCutAfterSweep(t *testing.T) {
	fs := powercut.MountForTest(t, powercut.Strict)
	dir := filepath.Join(fs.Dir(), "shard-0")
	require.NoError(t, durablefs.MkdirAllDurable(dir, DataDirMode))
	s, err := openLogStore(dir, LogWAL, false, hclog.NewNullLogger())
	require.NoError(t, err)
	storeEntries(t, s, 1, 3000)
	require.NoError(t, s.DeleteRange(1, 2500))
	cutPower(t, fs)
	_ = Close(s) // its files are gone with the power

	s, err = openLogStore(dir, LogWAL, false, hclog.NewNullLogger())
	require.NoError(t, err)
	walDir := filepath.Join(dir, walDirName)
	require.Empty(t, walFiles(t, walDir, walfiles.SweptSuffix), "a swept segment outlived the open")
	require.Len(t, walFiles(t, walDir, ".wal"), 1, "the dropped segment outlived the open")
	checkLog(t, s, 2501, 3000)
	require.NoError(t, Close(s))
}

// storeEntries appends entries from..to, as entryData makes them, ten at a
// time.
func storeEntries(t *testing.T, s Store, from, to uint64) {
	t.Helper()
	for i := from; i <= to; i += 10 {
		var logs []*raft.Log
		for j := i; j < i+10 && j <= to; j++ {
			logs = append(logs, &raft.Log{Index: j, Term: 1, Type: raft.LogCommand, Data: entryData(j, 9000)})
		}
		require.NoError(t, s.StoreLogs(logs))
	}
}
