package procs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// DataDir returns server i's data dir.
func (c *Servers) DataDir(i int) string {
	return filepath.Join(c.dataRoot(), fmt.Sprintf("data-%d", i))
}

// dataRoot is where the servers' data dirs are.
func (c *Servers) dataRoot() string {
	if c.cfg.DataRoot != "" {
		return c.cfg.DataRoot
	}
	return c.cfg.Dir
}

// mountSmallDisks mounts a tmpfs of c.cfg.SmallDisks bytes on every
// server's data dir.
func (c *Servers) mountSmallDisks() error {
	for i := range c.Addrs {
		dir := c.DataDir(i)
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
func (c *Servers) unmountSmallDisks() {
	for _, dir := range c.mounted {
		_ = exec.Command("umount", "-l", dir).Run()
	}
	c.mounted = nil
}
