package planted

import (
	"time"

	"github.com/hashicorp/raft-wal/types"
)

// LateSyncDelay is how long after a Sync call a LateSync file really
// syncs.
const LateSyncDelay = 300 * time.Millisecond

// LateSync returns vfs with an acknowledge-before-sync bug: a file's Sync
// returns at once and the real fsync happens LateSyncDelay later, so a
// Raft log on it acknowledges writes that a power cut in between loses.
// kvsserver gets it only when built with -tags planted_latesync.
func LateSync(vfs types.VFS) types.VFS { return lateSyncFS{vfs} }

type lateSyncFS struct{ types.VFS }

func (fs lateSyncFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	f, err := fs.VFS.Create(dir, name, size)
	if err != nil {
		return nil, err
	}
	return lateSyncFile{f}, nil
}

func (fs lateSyncFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	f, err := fs.VFS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	return lateSyncFile{f}, nil
}

type lateSyncFile struct{ types.WritableFile }

func (f lateSyncFile) Sync() error {
	time.AfterFunc(LateSyncDelay, func() { _ = f.WritableFile.Sync() })
	return nil
}
