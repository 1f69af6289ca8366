package planted

import (
	"sync"
	"time"

	"github.com/hashicorp/raft-wal/types"
)

// LateSyncPeriod is how often, at most, a LateSync file really syncs.
const LateSyncPeriod = time.Second

// LateSync returns vfs with an acknowledge-before-sync bug: a file's Sync
// really syncs at most once per LateSyncPeriod and otherwise returns at
// once, so a Raft log on it acknowledges up to a period of writes that a
// power cut loses.
// kvsserver gets it only when built with -tags planted_latesync.
func LateSync(vfs types.VFS) types.VFS { return lateSyncFS{vfs} }

type lateSyncFS struct{ types.VFS }

func (fs lateSyncFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	f, err := fs.VFS.Create(dir, name, size)
	if err != nil {
		return nil, err
	}
	return &lateSyncFile{WritableFile: f}, nil
}

func (fs lateSyncFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	f, err := fs.VFS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	return &lateSyncFile{WritableFile: f}, nil
}

type lateSyncFile struct {
	types.WritableFile
	mu   sync.Mutex
	last time.Time // of the last real sync; guarded by mu
}

func (f *lateSyncFile) Sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if time.Since(f.last) < LateSyncPeriod {
		return nil
	}
	f.last = time.Now()
	return f.WritableFile.Sync()
}
