package walfiles

import (
	"sync"

	"github.com/hashicorp/go-hclog"
	wal "github.com/hashicorp/raft-wal"
	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
)

// Open opens the raft-wal log in dir, which must exist, with segments of
// segmentSize bytes, logging to log: its dropped segments are swept
// (sweep.go), its sealed segments read from their files (sealed.go), and
// with noSync its segment files never sync. It returns once the segments
// the open dropped are unlinked.
func Open(dir string, segmentSize int, noSync bool, log hclog.Logger) (WAL, error) {
	if err := removeSwept(dir); err != nil {
		return WAL{}, err
	}
	pending := new(sync.WaitGroup)
	var vfs types.VFS = sweepFS{VFS: walfs.New(), pending: pending}
	if noSync {
		vfs = noSyncFS{vfs}
	}
	vfs = plantLateSync(vfs)
	w, err := wal.Open(dir, wal.WithLogger(log), wal.WithSegmentSize(segmentSize),
		wal.WithSegmentFiler(sealingFiler{segment.NewFiler(dir, vfs)}))
	pending.Wait() // what the open deleted is gone when it returns
	if err != nil {
		return WAL{}, err
	}
	return WAL{WAL: w, pending: pending}, nil
}

// noSyncFS is a WAL's file system whose segment files never sync: the
// log of -unsafe-nosync. (The WAL's small meta file, written when a
// segment fills, still syncs.)
type noSyncFS struct{ types.VFS }

// Create implements types.VFS.
func (fs noSyncFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	f, err := fs.VFS.Create(dir, name, size)
	if err != nil {
		return nil, err
	}
	return noSyncFile{f}, nil
}

// OpenWriter implements types.VFS.
func (fs noSyncFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	f, err := fs.VFS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	return noSyncFile{f}, nil
}

// noSyncFile is a segment file whose Sync does nothing.
type noSyncFile struct{ types.WritableFile }

// Sync implements types.WritableFile: it does nothing.
func (noSyncFile) Sync() error { return nil }
