package main

import (
	"fmt"
	"os"
	"sync"

	"github.com/batchkv/batchkv/chaos/experiment"
	"github.com/batchkv/batchkv/internal/powercut"
)

// mounted holds the clean-up of each power-cut filesystem this process
// serves, so that an interrupt unmounts them and deletes their files.
var mounted struct {
	mu  sync.Mutex
	fss map[*powercut.FS]func()
}

// mountPowerCut mounts a power-cut filesystem under a new temporary
// directory, puts the run's data dirs on it and gives the run its Cut.
// The returned function unmounts it and deletes its files.
func mountPowerCut(o *experiment.Options, mode powercut.Mode) (func(), error) {
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
	cleanup := func() {
		_ = fs.Unmount()
		_ = os.Remove(mnt) // empty once unmounted; never RemoveAll a mount point
		_ = os.RemoveAll(backing)
	}
	mounted.mu.Lock()
	if mounted.fss == nil {
		mounted.fss = map[*powercut.FS]func(){}
	}
	mounted.fss[fs] = cleanup
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
		cleanup()
	}, nil
}

// unmountAll unmounts every power-cut filesystem and deletes its files
// (on an interrupt, once the servers are stopped).
func unmountAll() {
	mounted.mu.Lock()
	defer mounted.mu.Unlock()
	for _, cleanup := range mounted.fss {
		cleanup()
	}
}
