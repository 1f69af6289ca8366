package replica

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/batchkv/batchkv/internal/procstat"
)

// entryData returns an entry's data of n bytes, different for each index.
func entryData(index uint64, n int) []byte {
	d := bytes.Repeat([]byte{byte(index)}, n)
	copy(d, []byte{byte(index >> 8), byte(index >> 16)})
	return d
}

// TestLogStoreReopensWithoutSyncedFreelist: a log written with
// boltOptions, whose free pages are never written down, reopens with
// every entry it held, reuses the pages freed before it closed without
// overwriting a live entry, and passes BoltDB's own consistency check.
func TestLogStoreReopensWithoutSyncedFreelist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raft.db")
	open := func() *raftboltdb.BoltStore {
		s, err := raftboltdb.New(raftboltdb.Options{Path: path, BoltOptions: boltOptions()})
		require.NoError(t, err)
		return s
	}
	store := func(s *raftboltdb.BoltStore, from, to uint64) {
		for i := from; i <= to; i++ {
			require.NoError(t, s.StoreLog(&raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: entryData(i, 9000)}))
		}
	}
	check := func(s *raftboltdb.BoltStore, from, to uint64) {
		first, err := s.FirstIndex()
		require.NoError(t, err)
		last, err := s.LastIndex()
		require.NoError(t, err)
		require.Equal(t, [2]uint64{from, to}, [2]uint64{first, last})
		for i := from; i <= to; i++ {
			var l raft.Log
			require.NoError(t, s.GetLog(i, &l))
			require.Equal(t, entryData(i, 9000), l.Data, "entry %d", i)
		}
	}
	// consistent runs BoltDB's own check of the closed file.
	consistent := func() {
		db, err := bbolt.Open(path, 0o600, boltOptions())
		require.NoError(t, err)
		defer func() { require.NoError(t, db.Close()) }()
		require.NoError(t, db.View(func(tx *bbolt.Tx) error {
			for err := range tx.Check() {
				return err
			}
			return nil
		}))
	}

	s := open()
	store(s, 1, 300)
	require.NoError(t, s.DeleteRange(1, 250)) // as a snapshot truncates
	check(s, 251, 300)
	require.NoError(t, s.Close())
	consistent()

	s = open()
	check(s, 251, 300)
	store(s, 301, 600) // fills the pages freed before the reopen
	check(s, 251, 600)
	require.NoError(t, s.Close())
	consistent()

	s = open()
	check(s, 251, 600)
	require.NoError(t, s.Close())
}

// BenchmarkLogStore stores entries of 30,000 bytes (a replicated shard's
// entry under the standard load) six to a call, as a follower does, and
// deletes all but the last 1,024 every 8,192 entries, as snapshots do;
// cpu-us/entry is the process's CPU time (user and system) per entry.
// "default" is raft-boltdb as it comes; "ours" uses boltOptions.
func BenchmarkLogStore(b *testing.B) {
	for _, c := range []struct {
		name string
		opts *bbolt.Options
	}{{"default", nil}, {"ours", boltOptions()}} {
		b.Run(c.name, func(b *testing.B) {
			s, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(b.TempDir(), "raft.db"), BoltOptions: c.opts})
			require.NoError(b, err)
			defer func() { _ = s.Close() }()
			data := entryData(0, 30_000)
			cpu0 := procstat.Read().CPU
			b.ResetTimer()
			for i := uint64(1); i <= uint64(b.N); i += 6 {
				logs := make([]*raft.Log, 6)
				for j := range logs {
					logs[j] = &raft.Log{Index: i + uint64(j), Term: 1, Type: raft.LogCommand, Data: data}
				}
				require.NoError(b, s.StoreLogs(logs))
				if last := i + 5; last/8192 != (i-1)/8192 && last > 8192 {
					first, err := s.FirstIndex()
					require.NoError(b, err)
					require.NoError(b, s.DeleteRange(first, last-1024))
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((procstat.Read().CPU-cpu0).Microseconds())/float64(b.N), "cpu-us/entry")
		})
	}
}
