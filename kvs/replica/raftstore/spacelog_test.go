package raftstore

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// mountTmpfs mounts a tmpfs of size bytes on dir until the test ends, and
// skips the test where that is not possible.
func mountTmpfs(t *testing.T, dir string, size int64) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs for a full-disk test needs root")
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs on %s (%v: %s)", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
}

// TestSpaceLogMendsASealedWAL: a WAL on a real tmpfs runs out of room for
// its next segment. raft-wal then answers every append ErrSealed until it
// is reopened; spaceLog reopens it on the first append after the file
// system has grown, and the log continues with every entry it had.
func TestSpaceLogMendsASealedWAL(t *testing.T) {
	dir := t.TempDir()
	mountTmpfs(t, dir, 40<<20)
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	open := func() (Store, error) { return openLogStore(dir, LogWAL, false, hclog.NewNullLogger()) }
	inner, err := open()
	require.NoError(t, err)
	s := newSpaceLog(inner, dir, nil, open, log)
	defer func() { require.NoError(t, s.Close()) }()

	data := bytes.Repeat([]byte("x"), 256<<10)
	next := uint64(1)
	appendOne := func() error {
		err := s.StoreLogs([]*raft.Log{{Index: next, Term: 1, Type: raft.LogCommand, Data: data}})
		if err == nil {
			next++
		}
		return err
	}
	var firstErr error
	for range 400 {
		if firstErr = appendOne(); firstErr != nil {
			break
		}
	}
	require.Error(t, firstErr, "the WAL never ran out of space")
	require.True(t, isOutOfSpace(firstErr), "%v", firstErr)
	require.Contains(t, logged.String(), "Raft log out of space")
	// Still out of space: appends keep failing, reads still work.
	require.Error(t, appendOne())
	last, err := s.LastIndex()
	require.NoError(t, err)
	require.Equal(t, next-1, last)

	out, err := exec.Command("mount", "-o", "remount,size=200m", dir).CombinedOutput()
	require.NoError(t, err, "%s", out)
	for range 100 {
		require.NoError(t, appendOne())
	}
	require.Contains(t, logged.String(), "Raft log reopened")
	for i := uint64(1); i < next; i++ {
		var l raft.Log
		require.NoError(t, s.GetLog(i, &l), "entry %d", i)
		require.Equal(t, i, l.Index)
		require.Len(t, l.Data, len(data))
	}
}
