package walfiles

import (
	"os"
	"path/filepath"
	"strings"
	"sync"

	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/types"

	"github.com/batchkv/batchkv/kvs/replica/durablefs"
)

// When a snapshot lets Raft drop the head of its log, raft-wal deletes
// the segments it no longer needs (an unlink and a sync of the directory
// each) under its write lock, and every append waits: 76-143 ms in 5 of
// 8 truncations under the chaos load (slow-network-egress). raft-wal has
// already committed, in its meta file, that the segment is out of the
// log, so the segment is only renamed away under the lock, and a sweeper
// goroutine unlinks it and syncs the directory (1-9 ms a truncation).
// A power cut that undoes the rename brings back a segment the meta does
// not list, which raft-wal deletes at open; a leftover *.wal.swept (not
// a name raft-wal reads) is removed at open.

// SweptSuffix ends the name of a segment out of the log, waiting to be
// unlinked.
const SweptSuffix = ".swept"

// sweepFS is a WAL's file system whose Delete renames the segment away
// and leaves the unlink and the directory's sync to a goroutine.
type sweepFS struct {
	types.VFS
	pending *sync.WaitGroup
}

// Delete implements types.VFS.
func (fs sweepFS) Delete(dir, name string) error {
	swept := name + SweptSuffix
	if err := os.Rename(filepath.Join(dir, name), filepath.Join(dir, swept)); err != nil {
		return err
	}
	fs.pending.Add(1)
	go func() {
		defer fs.pending.Done()
		if err := os.Remove(filepath.Join(dir, swept)); err == nil {
			_ = durablefs.SyncDir(dir)
		}
	}()
	return nil
}

// removeSwept deletes the segments a sweeper had not unlinked when its
// server stopped.
func removeSwept(dir string) error {
	return durablefs.RemoveMatching(dir, func(e os.DirEntry) bool {
		return !e.IsDir() && strings.HasSuffix(e.Name(), SweptSuffix)
	}, os.Remove)
}

// WAL is an open raft-wal log whose Close also waits for its sweeper, so
// that nothing of the log touches its directory once it is closed.
type WAL struct {
	*wal.WAL
	pending *sync.WaitGroup
}

// Close implements io.Closer.
func (w WAL) Close() error {
	err := w.WAL.Close()
	w.pending.Wait()
	return err
}
