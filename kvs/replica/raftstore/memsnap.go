package raftstore

import (
	"bytes"
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/raft"
)

// memSnapshots is the snapshot store of a replica without a data dir: it
// keeps the latest snapshot in memory. Unlike raft's InmemSnapshotStore,
// a snapshot becomes the latest only once its sink is closed, so a leader
// never sends a learner one that is still being written, and a cancelled
// one is dropped.
type memSnapshots struct {
	mu     sync.Mutex
	latest *memSnapshot // nil until the first snapshot closes
	made   uint64       // snapshots created, for unique IDs
}

// memSnapshot is a finished snapshot; data is never written again.
type memSnapshot struct {
	meta raft.SnapshotMeta
	data []byte
}

// memSnapshotSink collects one snapshot until Close or Cancel.
type memSnapshotSink struct {
	store *memSnapshots
	meta  raft.SnapshotMeta
	buf   bytes.Buffer
	done  bool
}

// Create implements raft.SnapshotStore.
func (s *memSnapshots) Create(version raft.SnapshotVersion, index, term uint64, conf raft.Configuration,
	confIndex uint64, _ raft.Transport) (raft.SnapshotSink, error) {
	s.mu.Lock()
	s.made++
	id := fmt.Sprintf("%d-%d-%d", term, index, s.made)
	s.mu.Unlock()
	return &memSnapshotSink{store: s, meta: raft.SnapshotMeta{Version: version, ID: id, Index: index, Term: term,
		Configuration: conf, ConfigurationIndex: confIndex}}, nil
}

// List implements raft.SnapshotStore: the latest finished snapshot.
func (s *memSnapshots) List() ([]*raft.SnapshotMeta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.latest == nil {
		return nil, nil
	}
	meta := s.latest.meta
	return []*raft.SnapshotMeta{&meta}, nil
}

// Open implements raft.SnapshotStore.
func (s *memSnapshots) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.latest == nil || s.latest.meta.ID != id {
		return nil, nil, fmt.Errorf("replica: no snapshot %q in memory", id)
	}
	meta := s.latest.meta
	return &meta, io.NopCloser(bytes.NewReader(s.latest.data)), nil
}

// Write implements raft.SnapshotSink.
func (k *memSnapshotSink) Write(p []byte) (int, error) {
	if k.done {
		return 0, fmt.Errorf("replica: snapshot %s already closed", k.meta.ID)
	}
	return k.buf.Write(p)
}

// Close makes the snapshot the store's latest.
func (k *memSnapshotSink) Close() error {
	if k.done {
		return nil
	}
	k.done = true
	k.meta.Size = int64(k.buf.Len())
	k.store.mu.Lock()
	k.store.latest = &memSnapshot{meta: k.meta, data: k.buf.Bytes()}
	k.store.mu.Unlock()
	return nil
}

// Cancel drops the snapshot.
func (k *memSnapshotSink) Cancel() error {
	k.done = true
	k.buf = bytes.Buffer{}
	return nil
}

// ID implements raft.SnapshotSink.
func (k *memSnapshotSink) ID() string { return k.meta.ID }
