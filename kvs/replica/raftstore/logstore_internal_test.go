package raftstore

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
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

// checkLog requires s to hold exactly the entries from..to, as
// entryData made them.
func checkLog(t *testing.T, s Store, from, to uint64) {
	t.Helper()
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

// TestLogStoreReopens: in each format, a log keeps its entries, term and
// vote across a close, after a head truncation (as a snapshot makes) and
// a tail truncation (as a new leader's conflicting entries make), and
// reuses its freed space without overwriting a live entry. A bolt log,
// whose free pages are never written down (boltOptions), also passes
// BoltDB's own consistency check.
func TestLogStoreReopens(t *testing.T) {
	for _, c := range []struct {
		name   string
		format LogFormat
		noSync bool
	}{{"wal", LogWAL, false}, {"wal-nosync", LogWAL, true}, {"bolt", LogBolt, false}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			open := func() Store {
				s, err := openLogStore(dir, c.format, c.noSync, hclog.NewNullLogger())
				require.NoError(t, err)
				return s
			}
			store := func(s Store, from, to uint64) {
				for i := from; i <= to; i += 10 {
					var logs []*raft.Log
					for j := i; j < i+10 && j <= to; j++ {
						logs = append(logs, &raft.Log{Index: j, Term: 1, Type: raft.LogCommand, Data: entryData(j, 9000)})
					}
					require.NoError(t, s.StoreLogs(logs))
				}
			}
			closeAndCheck := func(s Store) {
				require.NoError(t, Close(s))
				if c.format == LogBolt {
					boltConsistent(t, filepath.Join(dir, boltLogName))
				}
			}

			s := open()
			store(s, 1, 3000) // 27 MB: the WAL fills a segment
			require.NoError(t, s.SetUint64([]byte("CurrentTerm"), 7))
			require.NoError(t, s.DeleteRange(1, 2500))    // as a snapshot truncates
			require.NoError(t, s.DeleteRange(2901, 3000)) // as a new leader's log overrides
			checkLog(t, s, 2501, 2900)
			closeAndCheck(s)

			s = open()
			checkLog(t, s, 2501, 2900)
			term, err := s.GetUint64([]byte("CurrentTerm"))
			require.NoError(t, err)
			require.Equal(t, uint64(7), term)
			store(s, 2901, 4000) // reuses the space freed before the close
			checkLog(t, s, 2501, 4000)
			closeAndCheck(s)

			s = open()
			checkLog(t, s, 2501, 4000)
			require.NoError(t, Close(s))
		})
	}
}

// boltConsistent runs BoltDB's own check of the closed file at path.
func boltConsistent(t *testing.T, path string) {
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

// TestLogStoreKeepsItsFormat: a shard's dir that holds a log in one
// format does not open in the other, the error names the flag to use,
// and the dir is left as it was.
func TestLogStoreKeepsItsFormat(t *testing.T) {
	for _, c := range []struct{ made, asked LogFormat }{{LogBolt, LogWAL}, {LogWAL, LogBolt}, {LogBolt, ""}} {
		dir := t.TempDir()
		s, err := openLogStore(dir, c.made, false, hclog.NewNullLogger())
		require.NoError(t, err)
		require.NoError(t, s.StoreLogs([]*raft.Log{{Index: 1, Term: 1, Type: raft.LogCommand, Data: entryData(1, 100)}}))
		require.NoError(t, Close(s))
		before, err := os.ReadDir(dir)
		require.NoError(t, err)

		_, err = openLogStore(dir, c.asked, false, hclog.NewNullLogger())
		require.ErrorContains(t, err, "-raft-log "+string(c.made), "made %s, asked %q", c.made, c.asked)
		after, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Equal(t, names(before), names(after), "the dir changed")

		s, err = openLogStore(dir, c.made, false, hclog.NewNullLogger())
		require.NoError(t, err)
		last, err := s.LastIndex()
		require.NoError(t, err)
		require.Equal(t, uint64(1), last)
		require.NoError(t, Close(s))
	}
}

func names(es []os.DirEntry) []string {
	var n []string
	for _, e := range es {
		n = append(n, e.Name())
	}
	return n
}

// TestParseLogFormat: the flag's values, its default, and a clear error.
func TestParseLogFormat(t *testing.T) {
	for in, want := range map[string]LogFormat{"": LogWAL, "wal": LogWAL, "bolt": LogBolt} {
		got, err := ParseLogFormat(in)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err := ParseLogFormat("boltdb")
	require.ErrorContains(t, err, `"boltdb": want one of [wal bolt]`)
}

// BenchmarkLogStore stores entries of 30,000 bytes (a replicated shard's
// entry under the standard load) six to a call, as a follower does, and
// deletes all but the last 1,024 every 8,192 entries, as snapshots do;
// cpu-us/entry is the process's CPU time (user and system) per entry.
// "bolt-default" is raft-boltdb as it comes, "bolt" uses boltOptions, and
// "wal" is LogWAL as openLogStore opens it; the "-nosync" ones do not
// fsync.
func BenchmarkLogStore(b *testing.B) {
	for _, c := range []struct {
		name string
		open func(dir string) (Store, error)
	}{
		{"bolt-default", func(dir string) (Store, error) {
			return raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, boltLogName)})
		}},
		{"bolt", func(dir string) (Store, error) { return openLogStore(dir, LogBolt, false, hclog.NewNullLogger()) }},
		{"wal", func(dir string) (Store, error) { return openLogStore(dir, LogWAL, false, hclog.NewNullLogger()) }},
		{"wal-nosync", func(dir string) (Store, error) { return openLogStore(dir, LogWAL, true, hclog.NewNullLogger()) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, err := c.open(b.TempDir())
			require.NoError(b, err)
			defer func() { _ = Close(s) }()
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
