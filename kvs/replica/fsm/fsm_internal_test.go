package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
)

// memSink is a raft.SnapshotSink that keeps the snapshot in memory.
type memSink struct{ bytes.Buffer }

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { return nil }
func (s *memSink) Close() error  { return nil }

// TestShardDigest: the digest depends on the pairs, not on the order they
// were written in, and a single changed value, a missing key or a value
// moved to another key changes it. A snapshot restored elsewhere has the
// same digest and counts as a restore.
func TestShardDigest(t *testing.T) {
	for _, name := range store.Kinds {
		t.Run(name, func(t *testing.T) {
			newStore := func() store.Store { s, _ := store.New(name); return s }
			fill := func(order []int, edit func(store.Store)) *Machine {
				f := newShardFSM(newStore, DefaultSessionTTL)
				for _, i := range order {
					f.current().Put(fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i))
				}
				if edit != nil {
					edit(f.current())
				}
				return f
			}
			fwd, rev := make([]int, 100), make([]int, 100)
			for i := range fwd {
				fwd[i], rev[i] = i, 99-i
			}
			base := fill(fwd, nil).digest()
			require.NotZero(t, base)
			require.Equal(t, base, fill(rev, nil).digest())
			require.NotEqual(t, base, fill(fwd, func(s store.Store) { s.Put("k7", "v8") }).digest())
			require.NotEqual(t, base, fill(fwd, func(s store.Store) { s.Delete("k7") }).digest())
			// "k1"+"0v1" and "k10"+"v1" concatenate alike; lengths keep them apart.
			require.NotEqual(t, fill(nil, func(s store.Store) { s.Put("k1", "0v1") }).digest(),
				fill(nil, func(s store.Store) { s.Put("k10", "v1") }).digest())

			src := fill(fwd, nil)
			snap, err := src.Snapshot()
			require.NoError(t, err)
			var sink memSink
			require.NoError(t, snap.Persist(&sink))
			dst := fill(nil, nil)
			require.Zero(t, dst.restores.Load())
			require.NoError(t, dst.Restore(io.NopCloser(&sink)))
			require.Equal(t, base, dst.digest())
			require.EqualValues(t, 1, dst.restores.Load())
		})
	}
}

var _ raft.SnapshotSink = (*memSink)(nil)

// TestRestoreRefusesOversizePairs: a snapshot that claims a key or value
// over the wire's limits is refused from the claimed length, before
// anything of that size is allocated.
func TestRestoreRefusesOversizePairs(t *testing.T) {
	for _, c := range []struct {
		name       string
		key, value uint64
	}{
		{"key over the limit", wire.MaxKeyBytes + 1, 1},
		{"value over the limit", 1, wire.MaxValueBytes + 1},
		{"a 1 TiB value", 1, 1 << 40},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := []byte(snapshotMagic)
			b = binary.AppendUvarint(b, 0) // no sessions
			b = append(b, 1)
			b = binary.AppendUvarint(b, c.key)
			if c.key <= wire.MaxKeyBytes {
				b = append(b, make([]byte, c.key)...)
			}
			b = binary.AppendUvarint(b, c.value)
			f := newShardFSM(func() store.Store { return store.NewArena() }, DefaultSessionTTL)
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			err := f.Restore(io.NopCloser(bytes.NewReader(b)))
			require.ErrorContains(t, err, "limit")
			runtime.ReadMemStats(&ms)
			require.Less(t, ms.TotalAlloc-before, uint64(8<<20), "allocated for a pair it refused")
			require.Zero(t, f.restores.Load())
		})
	}
}

// TestSnapshotIsPointInTime: a snapshot persisted after more writes were
// applied holds the shard as it was when Snapshot returned, for both
// store kinds (the arena is frozen, the sync.Map copied).
func TestSnapshotIsPointInTime(t *testing.T) {
	for _, name := range store.Kinds {
		t.Run(name, func(t *testing.T) {
			newStore := func() store.Store { s, _ := store.New(name); return s }
			f := newShardFSM(newStore, DefaultSessionTTL)
			for i := range 1000 {
				f.current().Put(fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i))
			}
			before := f.digest()
			snap, err := f.Snapshot()
			require.NoError(t, err)
			for i := range 1000 {
				if i%2 == 0 {
					f.current().Delete(fmt.Sprintf("k%d", i))
				} else {
					f.current().Put(fmt.Sprintf("k%d", i), "changed")
				}
			}
			require.NotEqual(t, before, f.digest())
			var sink memSink
			require.NoError(t, snap.Persist(&sink))
			snap.Release()
			g := newShardFSM(newStore, DefaultSessionTTL)
			require.NoError(t, g.Restore(io.NopCloser(&sink)))
			require.Equal(t, before, g.digest())
			require.Equal(t, 1000, g.current().Len())
		})
	}
}

// TestApplyKeepsNothingOfTheEntry: Apply decodes an entry's ops aliasing
// its bytes, so it must keep none of them: after two entries (the second
// shorter than the first) its reused ops slice holds no key or value, and
// changing an entry's bytes after Apply changes nothing in the store, on
// every kind of store.
func TestApplyKeepsNothingOfTheEntry(t *testing.T) {
	for _, name := range store.Kinds {
		t.Run(name, func(t *testing.T) {
			f := newShardFSM(func() store.Store { s, _ := store.New(name); return s }, DefaultSessionTTL)
			entry := func(index uint64, ops ...wire.Op) *raft.Log {
				data := wire.AppendBatchArgs(nil, &wire.BatchArgs{Session: 1, Seq: index, Ops: ops})
				return &raft.Log{Index: index, Type: raft.LogCommand, Data: data, AppendedAt: time.Now()}
			}
			first := entry(1, wire.Op{Code: wire.OpPut, Key: "a", Value: "va"}, wire.Op{Code: wire.OpPut, Key: "b", Value: "vb"},
				wire.Op{Code: wire.OpPut, Key: "c", Value: "vc"})
			second := entry(2, wire.Op{Code: wire.OpGet, Key: "a"}, wire.Op{Code: wire.OpPut, Key: "a", Value: "va2"})
			for _, l := range []*raft.Log{first, second} {
				res, ok := f.Apply(l).(Result)
				require.True(t, ok)
				require.NoError(t, res.Err)
				for i := range l.Data {
					l.Data[i] = 'X' // the log's bytes, changed after the apply
				}
				require.Equal(t, make([]wire.Op, len(f.ops)), f.ops, "the reused slice keeps no op")
			}
			for k, want := range map[string]string{"a": "va2", "b": "vb", "c": "vc"} {
				got, found := f.current().AppendGet(nil, k)
				require.True(t, found, k)
				require.Equal(t, want, string(got), k)
			}
			require.Equal(t, 3, f.current().Len())
		})
	}
}
