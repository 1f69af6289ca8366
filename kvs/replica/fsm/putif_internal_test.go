package fsm

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
)

// applyBatch applies one batch to f as log entry index and returns what
// Apply answered.
func applyBatch(t *testing.T, f *Machine, index, session, seq uint64, ops ...wire.Op) Result {
	t.Helper()
	data := wire.AppendBatchArgs(nil, &wire.BatchArgs{Session: session, Seq: seq, Ops: ops})
	res, ok := f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: data, AppendedAt: time.Unix(1000, 0)}).(Result)
	require.True(t, ok)
	require.NoError(t, res.Err)
	return res
}

func newTestFSM() *Machine {
	return newShardFSM(func() store.Store { return store.NewArena() }, DefaultSessionTTL)
}

// TestFSMDecidesPutIfOnceOnRetry: the state machine decides a
// conditional put as it applies the entry, and answers a retry of the
// batch (same session and number) with the first answer, without
// deciding it again, though the key changed since: also after the
// session table went through a snapshot. A new number decides afresh.
func TestFSMDecidesPutIfOnceOnRetry(t *testing.T) {
	f := newTestFSM()
	f.current().Put("n", "1")
	batch := []wire.Op{
		{Code: wire.OpPutIf, Cond: wire.CondEqual, Key: "n", Expect: "1", Value: "2"},
		{Code: wire.OpPut, Key: "other", Value: "x"},
		{Code: wire.OpPutIf, Cond: wire.CondAbsent, Key: "n", Value: "never"},
		{Code: wire.OpGet, Key: "n"},
	}
	first := applyBatch(t, f, 1, 7, 1, batch...)
	require.False(t, first.Duplicate)
	want := []wire.Result{
		{Status: wire.StatusOK, Value: "1"},
		{Status: wire.StatusOK},
		{Status: wire.StatusMismatch, Value: "2"},
		{Status: wire.StatusOK, Value: "2"},
	}
	require.Equal(t, want, first.Results)

	// Another session moves the key on; the retry must not see that.
	applyBatch(t, f, 2, 8, 1, wire.Op{Code: wire.OpPut, Key: "n", Value: "1"})
	retried := applyBatch(t, f, 3, 7, 1, batch...)
	require.True(t, retried.Duplicate)
	require.Equal(t, []wire.Result{want[0], {Status: wire.StatusOK}, want[2], {Status: wire.StatusUnavail}}, retried.Results)
	v, _ := store.Get(f.current(), "n")
	require.Equal(t, "1", v, "the retry was applied again")

	// Through a snapshot.
	snap, err := f.Snapshot()
	require.NoError(t, err)
	var sink memSink
	require.NoError(t, snap.Persist(&sink))
	snap.Release()
	g := newTestFSM()
	require.NoError(t, g.Restore(io.NopCloser(&sink)))
	require.Equal(t, retried.Results, applyBatch(t, g, 4, 7, 1, batch...).Results)

	// A new number on the session is decided on the current state.
	again := applyBatch(t, g, 5, 7, 2, batch[0])
	require.False(t, again.Duplicate)
	require.Equal(t, []wire.Result{{Status: wire.StatusOK, Value: "1"}}, again.Results)
}

// TestFSMReplayNeedsTheSameBatch: a retry whose conditional puts are not
// the ones remembered, or of an older batch, gets no results (the
// service answers "unknown"), and a batch without conditional puts keeps
// no outcomes.
func TestFSMReplayNeedsTheSameBatch(t *testing.T) {
	f := newTestFSM()
	cas := wire.Op{Code: wire.OpPutIf, Cond: wire.CondAlways, Key: "k", Value: "v"}
	applyBatch(t, f, 1, 7, 1, cas)
	applyBatch(t, f, 2, 7, 2, cas)
	older := applyBatch(t, f, 3, 7, 1, cas)
	require.True(t, older.Duplicate)
	require.Nil(t, older.Results)
	changed := applyBatch(t, f, 4, 7, 2, cas, cas)
	require.True(t, changed.Duplicate)
	require.Nil(t, changed.Results)

	plain := applyBatch(t, f, 5, 9, 1, wire.Op{Code: wire.OpPut, Key: "k", Value: "v"})
	require.Nil(t, plain.Results)
	require.Nil(t, f.sessions[9].outcomes)
}

// TestRestoreFirstFormatSnapshot: a snapshot written before outcomes were
// kept ("BKVSNAP1") restores its sessions and pairs; a retry of a batch
// with conditional puts from such a session gets no results.
func TestRestoreFirstFormatSnapshot(t *testing.T) {
	b := []byte(snapshotMagicV1)
	b = binary.AppendUvarint(b, 1)
	b = binary.LittleEndian.AppendUint64(b, 7) // session 7
	b = binary.AppendUvarint(b, 1)             // seq 1
	b = binary.LittleEndian.AppendUint64(b, 1000)
	b = append(b, 1, 1, 'k', 1, 'v', 0)
	f := newTestFSM()
	require.NoError(t, f.Restore(io.NopCloser(bytes.NewReader(b))))
	v, ok := store.Get(f.current(), "k")
	require.True(t, ok)
	require.Equal(t, "v", v)
	res := applyBatch(t, f, 1, 7, 1, wire.Op{Code: wire.OpPutIf, Cond: wire.CondAbsent, Key: "k", Value: "w"})
	require.True(t, res.Duplicate)
	require.Nil(t, res.Results)
}

// TestRestoreRefusesOversizeOutcomes: a snapshot session that claims more
// outcomes than a batch has ops, or an outcome value over the limit, is
// refused.
func TestRestoreRefusesOversizeOutcomes(t *testing.T) {
	for name, tail := range map[string][]byte{
		"too many outcomes": binary.AppendUvarint(nil, wire.MaxBatchOps+1),
		"value too large":   binary.AppendUvarint([]byte{1, byte(wire.StatusOK)}, wire.MaxValueBytes+1),
	} {
		t.Run(name, func(t *testing.T) {
			b := []byte(snapshotMagic)
			b = binary.AppendUvarint(b, 1)
			b = binary.LittleEndian.AppendUint64(b, 7)
			b = binary.AppendUvarint(b, 1)
			b = binary.LittleEndian.AppendUint64(b, 1000)
			b = append(b, tail...)
			err := newTestFSM().Restore(io.NopCloser(bytes.NewReader(b)))
			require.ErrorContains(t, err, "limit")
		})
	}
}
