package raftstore

import (
	"os"
	"path/filepath"
	"strings"
	"sync"

	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/types"
)

// When a snapshot lets Raft drop the head of its log, raft-wal deletes
// the segments it no longer needs while it holds its write lock: each
// deletion unlinks a file and fsyncs the directory, and every append
// waits. Under the chaos load (slow-network-egress) 5 of 8 truncations
// held appends for 76-143 ms, one second in the open load's p99 each
// time a replica snapshotted; with the sweep, 8 truncations took 1-9 ms.
// Nothing needs the
// file gone at once: raft-wal has already committed, in its meta file,
// that the segment is out of the log. So a segment is only renamed away
// (no sync) under the lock, and a sweeper goroutine unlinks it and syncs
// the directory afterwards.
//
// A power cut may undo the rename, bringing the name back: raft-wal
// deletes at open any segment its meta file does not list. A cut after
// the rename leaves a *.wal.swept file, which raft-wal does not read
// (not a *.wal name) and which the next open removes.

// sweptSuffix marks a WAL segment that is out of the log, waiting to be
// unlinked.
const sweptSuffix = ".swept"

// sweepFS is a WAL's file system whose Delete renames the segment away
// and leaves the unlink and the directory's sync to a goroutine.
type sweepFS struct {
	types.VFS
	pending *sync.WaitGroup
}

// Delete implements types.VFS.
func (fs sweepFS) Delete(dir, name string) error {
	swept := name + sweptSuffix
	if err := os.Rename(filepath.Join(dir, name), filepath.Join(dir, swept)); err != nil {
		return err
	}
	fs.pending.Add(1)
	go func() {
		defer fs.pending.Done()
		if err := os.Remove(filepath.Join(dir, swept)); err == nil {
			_ = SyncDir(dir)
		}
	}()
	return nil
}

// removeSwept deletes the segments a sweeper had not unlinked when its
// server stopped.
func removeSwept(dir string) error {
	return removeEntries(dir, func(e os.DirEntry) bool {
		return !e.IsDir() && strings.HasSuffix(e.Name(), sweptSuffix)
	}, os.Remove)
}

// sweptWAL is a WAL whose Close also waits for its sweeper, so that
// nothing of the WAL touches its directory once it is closed.
type sweptWAL struct {
	*wal.WAL
	pending *sync.WaitGroup
}

// Close implements io.Closer.
func (w sweptWAL) Close() error {
	err := w.WAL.Close()
	w.pending.Wait()
	return err
}
