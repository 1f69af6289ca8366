package raftstore

import (
	"io"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// TestMemSnapshotsShowOnlyFinishedSnapshots: a snapshot being written is
// not listed (the previous one is), a closed one is, with its size and
// bytes, and a cancelled one never is.
func TestMemSnapshotsShowOnlyFinishedSnapshots(t *testing.T) {
	s := &memSnapshots{}
	list, err := s.List()
	require.NoError(t, err)
	require.Empty(t, list)

	first, err := s.Create(1, 10, 2, raft.Configuration{}, 1, nil)
	require.NoError(t, err)
	_, err = first.Write([]byte("first"))
	require.NoError(t, err)
	list, _ = s.List()
	require.Empty(t, list, "a snapshot still being written is listed")
	require.NoError(t, first.Close())

	second, err := s.Create(1, 20, 2, raft.Configuration{}, 1, nil)
	require.NoError(t, err)
	_, err = second.Write([]byte("second, half"))
	require.NoError(t, err)
	list, _ = s.List()
	require.Len(t, list, 1)
	require.Equal(t, first.ID(), list[0].ID, "the unfinished snapshot replaced the finished one")
	meta, rc, err := s.Open(list[0].ID)
	require.NoError(t, err)
	data, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.Equal(t, "first", string(data))
	require.Equal(t, int64(5), meta.Size)

	require.NoError(t, second.Cancel())
	list, _ = s.List()
	require.Equal(t, first.ID(), list[0].ID, "a cancelled snapshot became the latest")
	_, _, err = s.Open(second.ID())
	require.Error(t, err)
}
