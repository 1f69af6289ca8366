package raftstore

import (
	"bytes"
	"io"
	"runtime"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// TestSnapshotWrittenBackAsItIsWritten: a 20 MiB snapshot starts the
// kernel writing it out every 8 MiB as it is written (twice), and still
// reads back whole.
func TestSnapshotWrittenBackAsItIsWritten(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("sync_file_range is Linux's")
	}
	store, err := openSnapshots(t.TempDir(), snapshotsRetained, hclog.NewNullLogger())
	require.NoError(t, err)
	sink, err := store.Create(raft.SnapshotVersionMax, 10, 2, raft.Configuration{}, 1, nil)
	require.NoError(t, err)
	chunk := bytes.Repeat([]byte("s"), 1<<20)
	for range 20 {
		_, err := sink.Write(chunk)
		require.NoError(t, err)
	}
	require.Equal(t, 2, sink.(*durableSink).writebacks)
	require.NoError(t, sink.Close())
	require.Nil(t, sink.(*durableSink).state, "the state file opened for writeback is closed")

	_, rc, err := store.Open(sink.ID())
	require.NoError(t, err)
	defer rc.Close()
	got, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.Len(t, got, 20<<20)
	require.Equal(t, bytes.Repeat([]byte("s"), 20<<20), got)
}
