package raftstore

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// A replica's files survive a power cut only if every directory entry
// they depend on is synced too: a file's fsync saves its content, not its
// name (POSIX; ext4 happens to save a new file's name as well, other
// filesystems do not). The helpers below make the directories as durable
// as the files: internal/powercut's filesystem loses whatever they miss.

// SyncDir fsyncs directory dir, making its entries durable.
func SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// MkdirAllDurable is os.MkdirAll that also fsyncs the parent of every
// directory it creates, so that a power cut keeps the whole path.
func MkdirAllDurable(dir string, perm os.FileMode) error {
	dir = filepath.Clean(dir)
	if st, err := os.Stat(dir); err == nil {
		if !st.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAllDurable(parent, perm); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return SyncDir(parent)
}

// trashSuffix marks a replica's directory that is being deleted.
const trashSuffix = ".removing"

// RemoveDirDurably deletes dir so that a power cut cannot bring it back
// under its name: it renames dir away, syncs the parent, then deletes it.
// A cut in the middle leaves a directory named *.removing, which no
// replica opens.
func RemoveDirDurably(dir string) error {
	trash := fmt.Sprintf("%s.%d%s", dir, time.Now().UnixNano(), trashSuffix)
	if err := os.Rename(dir, trash); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	parent := filepath.Dir(dir)
	if err := SyncDir(parent); err != nil {
		return err
	}
	if err := os.RemoveAll(trash); err != nil {
		return err
	}
	return SyncDir(parent)
}

// RemoveTrash deletes what RemoveDirDurably left in dir when the power
// was cut in the middle.
func RemoveTrash(dir string) error {
	return removeEntries(dir, func(e os.DirEntry) bool {
		return e.IsDir() && strings.HasSuffix(e.Name(), trashSuffix)
	}, os.RemoveAll)
}

// removeEntries deletes with remove each entry of dir that match picks;
// a dir that does not exist has none.
func removeEntries(dir string, match func(os.DirEntry) bool, remove func(path string) error) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	var errs []error
	for _, e := range entries {
		if match(e) {
			errs = append(errs, remove(filepath.Join(dir, e.Name())))
		}
	}
	return errors.Join(errs...)
}

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
	if err := MkdirAllDurable(dir, DataDirMode); err != nil {
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
// place, before raft compacts the log the snapshot replaces, and logs the
// snapshot's size and how long it took: a snapshot competes with the
// load for the CPU and the disk, and the log says when.
type durableSink struct {
	raft.SnapshotSink
	dir    string
	log    *slog.Logger
	began  time.Time
	bytes  int64
	closed bool
}

// Write implements io.Writer.
func (s *durableSink) Write(p []byte) (int, error) {
	n, err := s.SnapshotSink.Write(p)
	s.bytes += int64(n)
	return n, err
}

// Close implements raft.SnapshotSink. Raft closes a sink a second time
// after Persist has; the second Close does nothing more.
func (s *durableSink) Close() error {
	if s.closed {
		return s.SnapshotSink.Close()
	}
	written := time.Now()
	if err := s.SnapshotSink.Close(); err != nil {
		return err
	}
	if err := SyncDir(filepath.Join(s.dir, s.ID())); err != nil {
		return err
	}
	s.closed = true
	if s.log != nil {
		s.log.Info("snapshot saved", "id", s.ID(), "bytes", s.bytes,
			"write", written.Sub(s.began).Round(time.Millisecond), "sync", time.Since(written).Round(time.Millisecond))
	}
	return nil
}
