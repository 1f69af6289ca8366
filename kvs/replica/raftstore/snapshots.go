package raftstore

import (
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/kvs/replica/durablefs"
)

// durableSnapshots is a file snapshot store whose snapshots keep their
// files through a power cut: raft's FileSnapshotStore syncs the files and
// the snapshots/ directory after the rename, but never the snapshot's own
// directory, whose entries (state.bin, meta.json) are then lost on a
// filesystem that does not save a file's name with its content.
type durableSnapshots struct {
	*raft.FileSnapshotStore
	dir string       // the store's snapshots/ directory
	log *slog.Logger // says when each snapshot is saved; nil says nothing
}

// openSnapshots opens the file snapshot store in base, creating
// base/snapshots durably.
func openSnapshots(base string, retain int, logger hclog.Logger) (*durableSnapshots, error) {
	dir := filepath.Join(base, "snapshots")
	if err := durablefs.MkdirAllDurable(dir, DataDirMode); err != nil {
		return nil, err
	}
	fss, err := raft.NewFileSnapshotStoreWithLogger(base, retain, logger)
	if err != nil {
		return nil, err
	}
	return &durableSnapshots{FileSnapshotStore: fss, dir: dir}, nil
}

// Create implements raft.SnapshotStore.
func (s *durableSnapshots) Create(version raft.SnapshotVersion, index, term uint64,
	configuration raft.Configuration, configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.FileSnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, err
	}
	return &durableSink{SnapshotSink: sink, dir: s.dir, log: s.log, began: time.Now()}, nil
}

// durableSink syncs the snapshot's directory once raft has moved it into
// place, before raft compacts the log the snapshot replaces, and logs its
// size and how long it took (it competes with the load for CPU and disk).
// As it is written, it starts the kernel writing it out every
// writebackEvery bytes, so that the sync at its close does not flush the
// whole snapshot at once while the Raft logs' fsyncs wait behind it.
type durableSink struct {
	raft.SnapshotSink
	dir    string
	log    *slog.Logger
	began  time.Time
	bytes  int64
	closed bool

	state      *os.File // the state file being written, opened to start writeback; nil until then
	pending    int64    // bytes written since the last writeback started
	writebacks int      // writebacks started
}

// writebackEvery is how many bytes of a snapshot are written between two
// starts of their writeback.
const writebackEvery = 8 << 20

// Write implements raft.SnapshotSink.
func (s *durableSink) Write(p []byte) (int, error) {
	n, err := s.SnapshotSink.Write(p)
	s.bytes += int64(n)
	if s.pending += int64(n); s.pending >= writebackEvery {
		s.pending = 0
		s.writeback()
	}
	return n, err
}

// writeback starts the kernel writing out what reached the state file.
// Best effort: a failure leaves it to the sync at the close.
func (s *durableSink) writeback() {
	if s.state == nil {
		// raft's FileSnapshotSink writes <id>.tmp/state.bin, renamed at
		// its close.
		f, err := os.Open(filepath.Join(s.dir, s.ID()+".tmp", "state.bin"))
		if err != nil {
			return
		}
		s.state = f
	}
	if startWriteback(int(s.state.Fd())) == nil {
		s.writebacks++
	}
}

// closeState closes the state file opened for writeback, if any.
func (s *durableSink) closeState() {
	if s.state != nil {
		_ = s.state.Close()
		s.state = nil
	}
}

// Cancel implements raft.SnapshotSink.
func (s *durableSink) Cancel() error {
	s.closeState()
	return s.SnapshotSink.Cancel()
}

// Close implements raft.SnapshotSink. Raft closes a sink a second time
// after Persist has; the second Close does nothing more.
func (s *durableSink) Close() error {
	if s.closed {
		return s.SnapshotSink.Close()
	}
	s.closeState()
	written := time.Now()
	if err := s.SnapshotSink.Close(); err != nil {
		return err
	}
	if err := durablefs.SyncDir(filepath.Join(s.dir, s.ID())); err != nil {
		return err
	}
	s.closed = true
	if s.log != nil {
		s.log.Info("snapshot saved", "id", s.ID(), "bytes", s.bytes,
			"write", written.Sub(s.began).Round(time.Millisecond), "sync", time.Since(written).Round(time.Millisecond))
	}
	return nil
}
