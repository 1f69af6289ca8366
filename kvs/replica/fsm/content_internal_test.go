package fsm

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
)

// TestContentStandsAtTheLastCommand: Content names the last command
// entry applied (entries without commands leave it), with the digest
// and key count of the store as that entry left it; a snapshot carries
// the index to the replica that restores it, in a trailer that a server
// of an earlier version does not read. A snapshot without the trailer
// (written by such a server) leaves the index unknown, and Content
// refuses to describe the store, until the next command; a torn trailer
// is refused.
func TestContentStandsAtTheLastCommand(t *testing.T) {
	f := newTestFSM()
	c, ok := f.Content()
	require.True(t, ok)
	require.Equal(t, Content{}, c)
	applyBatch(t, f, 3, 0, 0, wire.Op{Code: wire.OpPut, Key: "a", Value: "1"})
	applyBatch(t, f, 5, 0, 0, wire.Op{Code: wire.OpPut, Key: "b", Value: "2"})
	require.Nil(t, f.Apply(&raft.Log{Index: 6, Type: raft.LogBarrier}))
	c, ok = f.Content()
	require.True(t, ok)
	require.Equal(t, Content{Index: 5, Digest: f.digest(), Keys: 2}, c)

	snap, err := f.Snapshot()
	require.NoError(t, err)
	applyBatch(t, f, 7, 0, 0, wire.Op{Code: wire.OpPut, Key: "c", Value: "3"})
	var sink memSink
	require.NoError(t, snap.Persist(&sink))
	snap.Release()
	written := sink.Bytes()
	dst := newTestFSM()
	require.NoError(t, dst.Restore(io.NopCloser(bytes.NewReader(written))))
	got, ok := dst.Content()
	require.True(t, ok)
	require.Equal(t, c, got, "the snapshot holds the store at entry 5, not 7")

	old := newTestFSM()
	applyBatch(t, old, 9, 0, 0, wire.Op{Code: wire.OpPut, Key: "x", Value: "y"})
	require.NoError(t, old.Restore(io.NopCloser(bytes.NewReader(written[:len(written)-8]))))
	_, ok = old.Content()
	require.False(t, ok, "a store restored without its index was described as at an entry")
	applyBatch(t, old, 10, 0, 0, wire.Op{Code: wire.OpPut, Key: "d", Value: "4"})
	got, ok = old.Content()
	require.True(t, ok)
	require.Equal(t, Content{Index: 10, Digest: old.digest(), Keys: 3}, got)

	require.ErrorContains(t, newTestFSM().Restore(io.NopCloser(bytes.NewReader(written[:len(written)-3]))), "snapshot index")
}

// holdingStore is a store whose puts wait, once entered is told, until
// release closes: an apply caught in the middle.
type holdingStore struct {
	store.Store
	entered chan struct{}
	release chan struct{}
}

func (s *holdingStore) Put(key, value string) {
	s.entered <- struct{}{}
	<-s.release
	s.Store.Put(key, value)
}

// TestContentRefusesAScanDuringAnApply: a scan while an entry is being
// applied describes no single point of the log, and Content says so;
// once the apply is over it names the new entry.
func TestContentRefusesAScanDuringAnApply(t *testing.T) {
	hs := &holdingStore{Store: store.NewArena(), entered: make(chan struct{}), release: make(chan struct{})}
	f := newShardFSM(func() store.Store { return hs }, DefaultSessionTTL)
	done := make(chan struct{})
	go func() {
		defer close(done)
		data := wire.AppendBatchArgs(nil, &wire.BatchArgs{Ops: []wire.Op{{Code: wire.OpPut, Key: "a", Value: "1"}}})
		f.Apply(&raft.Log{Index: 4, Type: raft.LogCommand, Data: data, AppendedAt: time.Unix(1000, 0)})
	}()
	<-hs.entered
	_, ok := f.Content()
	require.False(t, ok, "a scan in the middle of an apply was taken as the store at one entry")
	close(hs.release)
	<-done
	c, ok := f.Content()
	require.True(t, ok)
	require.Equal(t, Content{Index: 4, Digest: f.digest(), Keys: 1}, c)
}
