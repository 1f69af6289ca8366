package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/batchkv/batchkv/wire"
)

// smallDisks gives the scenarios that fill a data dir the size of the
// tmpfs mounted on every server's data dir, so that one can be filled
// without filling the machine's disk.
var smallDisks = map[string]int64{"disk-full": 2 << 30}

// diskFullLeave is how much space the disk-full scenario leaves free: below
// a server's 64 MiB reserve (the server is full at once), above the 32 MiB
// under which its log refuses commands, which the load then uses up.
const diskFullLeave = 60 << 20

// dataDir returns server i's data dir.
func (c *Cluster) dataDir(i int) string { return filepath.Join(c.cfg.Dir, fmt.Sprintf("data-%d", i)) }

// mountSmallDisks mounts a tmpfs of c.cfg.SmallDisks bytes on every
// server's data dir.
func (c *Cluster) mountSmallDisks() error {
	for i := range c.Addrs {
		dir := c.dataDir(i)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		opts := fmt.Sprintf("size=%d,mode=0700", c.cfg.SmallDisks)
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput(); err != nil {
			return fmt.Errorf("chaos: mount a tmpfs on %s (needs root): %v: %s", dir, err, out)
		}
		c.mounted = append(c.mounted, dir)
	}
	return nil
}

// unmountSmallDisks unmounts what mountSmallDisks mounted.
func (c *Cluster) unmountSmallDisks() {
	for _, dir := range c.mounted {
		_ = exec.Command("umount", "-l", dir).Run()
	}
	c.mounted = nil
}

// fillDisk fills dir's file system with a filler file until leave bytes
// are free, and returns the filler's name.
func fillDisk(dir string, leave int64) (string, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "", err
	}
	size := int64(st.Bavail)*st.Bsize - leave
	name := filepath.Join(dir, "filler")
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	if size > 0 {
		if err := syscall.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
			return "", fmt.Errorf("chaos: fill %s: %w", dir, err)
		}
	}
	return name, nil
}

// diskFull fills the data dir of a follower of shard 0 (a tmpfs) under
// the load, holds it full for the fault's length, then frees it.
func diskFull(r *run) (func(), error) {
	l, err := r.mustLeader()
	if err != nil {
		return nil, err
	}
	f := r.follower(l)
	filler, err := fillDisk(r.c.dataDir(f), diskFullLeave)
	if err != nil {
		return nil, err
	}
	from := r.tl.event(fmt.Sprintf("server %d's data dir filled (follower; %d MiB left)", f, diskFullLeave>>20))
	time.Sleep(min(2*time.Second, r.opt.Fault))
	st, serr := r.c.Admin.Status(r.c.Addrs[f], wire.StatusRequest{DiskOnly: true}, 2*time.Second)
	time.Sleep(r.opt.Fault - min(2*time.Second, r.opt.Fault))
	if err := os.Remove(filler); err != nil {
		return nil, err
	}
	to := r.tl.event(fmt.Sprintf("server %d's data dir freed", f))
	w := Window{From: from, To: to, Label: "a follower's data dir full"}
	r.tl.window(w.From, w.To, w.Label)
	return func() {
		full := serr == nil && st.Disk != nil && st.Disk.Full
		got := "not full"
		if serr != nil {
			got = serr.Error()
		} else if st.Disk != nil {
			got = fmt.Sprintf("full=%v, %d MiB free", st.Disk.Full, st.Disk.Free>>20)
		}
		r.check("the filled follower reports its disk full", "full", got, full)
		r.ratioCheck("throughput while a follower's data dir is full", w, 0.70)
		ss := r.mon.samples()
		d, ok := caughtUp(ss, views(ss, 0), 0, f, to)
		r.check("the follower is current once space returns", "≤ 10s after the disk is freed", orNever(d, ok), ok && d <= 10*time.Second)
	}, nil
}
