package main

import (
	"fmt"
	"os"
	"sync"

	"github.com/batchkv/batchkv/chaos"
	"github.com/batchkv/batchkv/internal/powercut"
)

// mounted holds the power-cut filesystems this process serves, so that an
// interrupt unmounts them.
var mounted struct {
	mu  sync.Mutex
	fss map[*powercut.FS]bool
}

// mountPowerCut mounts a power-cut filesystem under a new temporary
// directory, puts the run's data dirs on it and gives the run its Cut.
// The returned function unmounts it and deletes its files.
func mountPowerCut(o *chaos.Options, mode powercut.Mode) (func(), error) {
	mnt, err := os.MkdirTemp("", "batchkv-powercut-mnt-")
	if err != nil {
		return nil, err
	}
	backing, err := os.MkdirTemp("", "batchkv-powercut-disk-")
	if err != nil {
		_ = os.Remove(mnt)
		return nil, err
	}
	fs, err := powercut.Mount(mnt, backing, mode)
	if err != nil {
		_ = os.Remove(mnt)
		_ = os.RemoveAll(backing)
		return nil, err
	}
	mounted.mu.Lock()
	if mounted.fss == nil {
		mounted.fss = map[*powercut.FS]bool{}
	}
	mounted.fss[fs] = true
	mounted.mu.Unlock()
	o.DataRoot = mnt
	o.PowerCut = func() (string, error) {
		rep, err := fs.Cut()
		return fmt.Sprintf("%s (%s mode)", rep, mode), err
	}
	return func() {
		mounted.mu.Lock()
		delete(mounted.fss, fs)
		mounted.mu.Unlock()
		_ = fs.Unmount()
		_ = os.Remove(mnt) // empty once unmounted; never RemoveAll a mount point
		_ = os.RemoveAll(backing)
	}, nil
}

// unmountAll unmounts every power-cut filesystem (on an interrupt, once
// the servers are stopped).
func unmountAll() {
	mounted.mu.Lock()
	defer mounted.mu.Unlock()
	for fs := range mounted.fss {
		_ = fs.Unmount()
	}
}
