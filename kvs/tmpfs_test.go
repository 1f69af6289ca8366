package kvs_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// smallDisk is a tmpfs of a given size mounted on a test's directory: a
// real file system that fills, and that a test frees or grows while
// servers write to it. It is unmounted when the test ends.
type smallDisk struct {
	t   *testing.T
	dir string
}

// mountSmallDisk mounts a tmpfs of size bytes on dir (which must exist),
// and skips the test where mounting is not possible (not root).
func mountSmallDisk(t *testing.T, dir string, size int64) *smallDisk {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs for a full-disk test needs root")
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0700", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("cannot mount a tmpfs on %s (%v: %s): the full-disk tests need it", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return &smallDisk{t: t, dir: dir}
}

// free returns the bytes free on the disk.
func (d *smallDisk) free() int64 {
	var st syscall.Statfs_t
	require.NoError(d.t, syscall.Statfs(d.dir, &st))
	return int64(st.Bavail) * st.Bsize
}

// fillTo fills the disk with a filler file until only leave bytes are
// free (the file grows or shrinks as needed).
func (d *smallDisk) fillTo(leave int64) {
	d.t.Helper()
	name := filepath.Join(d.dir, "filler")
	var have int64
	if fi, err := os.Stat(name); err == nil {
		have = fi.Size()
	}
	want := max(have+d.free()-leave, 0)
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o600)
	require.NoError(d.t, err)
	defer func() { require.NoError(d.t, f.Close()) }()
	if want < have {
		require.NoError(d.t, f.Truncate(want))
		return
	}
	require.NoError(d.t, syscall.Fallocate(int(f.Fd()), 0, 0, want))
}

// emptyFiller removes the filler file.
func (d *smallDisk) emptyFiller() {
	d.t.Helper()
	require.NoError(d.t, os.Remove(filepath.Join(d.dir, "filler")))
}
