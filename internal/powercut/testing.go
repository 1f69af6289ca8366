package powercut

import (
	"os"
	"testing"
)

// Available reports why this machine cannot mount the filesystem, or ""
// when it can (root and /dev/fuse).
func Available() string {
	if os.Geteuid() != 0 {
		return "powercut needs root to mount FUSE directly"
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return "powercut needs /dev/fuse: " + err.Error()
	}
	return ""
}

// MountForTest mounts a filesystem under t.TempDir, served by a child
// process (see [ChildFS] for why not this one), and unmounts it in
// t.Cleanup (also when the test fails). It skips the test when the machine
// has no FUSE or the test does not run as root.
func MountForTest(t testing.TB, mode Mode) *ChildFS {
	t.Helper()
	if why := Available(); why != "" {
		t.Skip(why)
	}
	dir, backing := t.TempDir(), t.TempDir()
	c, err := MountInChild(dir, backing, mode)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// mountForTest mounts a filesystem with planted bugs in this process, for
// the filesystem's own tests, which reach it only through system calls
// (never through a memory map, which could hang the process; see ChildFS).
func mountForTest(t testing.TB, mode Mode, b bugs) *FS {
	t.Helper()
	if why := Available(); why != "" {
		t.Skip(why)
	}
	dir, backing := t.TempDir(), t.TempDir()
	f, err := mountWith(dir, backing, mode, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Unmount() })
	return f
}
