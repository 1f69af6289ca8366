package powercut

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Mode says which entries a file's fsync makes durable.
type Mode int

const (
	// Strict is POSIX: only a directory's fsync saves its entries.
	Strict Mode = iota
	// Ext4 adds ext4's behaviour for new files: a file's fsync (or
	// fdatasync) also saves its own entry and those of its new parents.
	Ext4
)

func (m Mode) String() string {
	switch m {
	case Strict:
		return "strict"
	case Ext4:
		return "ext4"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode reads "strict" or "ext4".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "strict":
		return Strict, nil
	case "ext4":
		return Ext4, nil
	}
	return 0, fmt.Errorf("powercut: unknown mode %q (want strict or ext4)", s)
}

// bugs are deliberate faults of the filesystem itself, for its own tests:
// each must make one of them fail.
type bugs struct {
	fsyncKeepsNoData     bool // a file's fsync saves nothing
	fsyncDirKeepsNothing bool // a directory's fsync saves nothing
	cutKeepsData         bool // a cut keeps the files' unsynced content
	cutKeepsEntries      bool // a cut keeps the unsynced directory entries
	appendAtDurableSize  bool // report the durable size (O_APPEND overwrites)
	fsyncDirENOSYS       bool // answer fsyncdir with ENOSYS (the kernel then skips them all)
}

// FS is a mounted power-cut filesystem. Safe for concurrent use.
type FS struct {
	dir     string // the mount point
	backing string // holds each file's volatile and durable contents

	mu     sync.Mutex // guards everything below, and the model
	m      *model
	gen    uint64 // mounts so far; a node of an older one answers EIO
	server *fuse.Server
	fsyncs int64 // fsync and fsyncdir calls answered
}

// Mount mounts a new, empty filesystem at dir, keeping the files' contents
// in backing (an empty directory on a real disk or tmpfs). The caller must
// call Unmount.
func Mount(dir, backing string, mode Mode) (*FS, error) {
	return mountWith(dir, backing, mode, bugs{})
}

func mountWith(dir, backing string, mode Mode, b bugs) (*FS, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("powercut: mounting needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return nil, fmt.Errorf("powercut: no FUSE device: %w", err)
	}
	f := &FS{dir: dir, backing: backing, m: newModel(backing, mode)}
	f.m.bugs = b
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.mountLocked(); err != nil {
		f.m.close()
		return nil, err
	}
	return f, nil
}

func (f *FS) mountLocked() error {
	f.gen++
	zero := time.Duration(0)
	root := &node{pfs: f, ino: f.m.root, gen: f.gen}
	srv, err := fs.Mount(f.dir, root, &fs.Options{
		EntryTimeout:    &zero,
		AttrTimeout:     &zero,
		NegativeTimeout: &zero,
		MountOptions: fuse.MountOptions{
			DirectMountStrict: true,
			FsName:            "powercut",
			Name:              "powercut",
			DisableXAttrs:     true,
			MaxWrite:          1 << 20,
		},
	})
	if err != nil {
		return fmt.Errorf("powercut: mount %s: %w", f.dir, err)
	}
	f.server = srv
	return nil
}

// Dir returns the mount point.
func (f *FS) Dir() string { return f.dir }

// Mode returns the filesystem's mode.
func (f *FS) Mode() Mode { return f.m.mode }

// Fsyncs returns how many fsync and fsyncdir calls the filesystem answered.
func (f *FS) Fsyncs() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fsyncs
}

// Cut cuts the power: everything not fsynced is lost, and the mount point
// shows the durable state from then on (through a fresh mount, so that no
// kernel cache survives). Kill the processes using the mount first; an
// operation still arriving on the old mount fails with EIO.
func (f *FS) Cut() (CutReport, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.server == nil {
		return CutReport{}, errors.New("powercut: not mounted")
	}
	f.gen++ // from here, the old mount's nodes answer EIO
	rep, err := f.m.cut()
	if err != nil {
		return rep, fmt.Errorf("powercut: cut: %w", err)
	}
	f.unmountLocked()
	return rep, f.mountLocked()
}

// unmountLocked unmounts, detaching lazily when a process still holds a
// file open (its operations then fail with EIO).
func (f *FS) unmountLocked() {
	srv := f.server
	f.server = nil
	done := make(chan error, 1)
	go func() { done <- srv.Unmount() }()
	select {
	case err := <-done:
		if err == nil {
			return
		}
	case <-time.After(2 * time.Second):
	}
	_ = syscall.Unmount(f.dir, syscall.MNT_DETACH)
}

// Unmount unmounts the filesystem and releases its files. It is idempotent.
func (f *FS) Unmount() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.server == nil {
		return nil
	}
	f.gen++
	f.unmountLocked()
	f.m.close()
	return nil
}
