package cpulimit

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// cgroupLimiter puts each limited process in a cgroup of its own whose CFS
// quota is the fraction of the period: the kernel throttles all of the
// process's threads once they used their share.
type cgroupLimiter struct {
	root string
	mu   sync.Mutex
	prev map[int]string // pid -> cgroup it came from
}

func newCgroupLimiter(root string) (*cgroupLimiter, error) {
	probe := filepath.Join(root, fmt.Sprintf("batchkv-probe-%d", os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return nil, err
	}
	if err := os.Remove(probe); err != nil {
		return nil, err
	}
	return &cgroupLimiter{root: root, prev: map[int]string{}}, nil
}

// Name implements Limiter.
func (c *cgroupLimiter) Name() string { return "cgroup v1 cpu.cfs_quota_us" }

func (c *cgroupLimiter) dir(pid int) string {
	return filepath.Join(c.root, fmt.Sprintf("batchkv-chaos-%d", pid))
}

// Limit implements Limiter.
func (c *cgroupLimiter) Limit(pid int, fraction float64) error {
	if pid <= 0 {
		return noProcess(pid)
	}
	prev, err := cpuCgroupOf(pid)
	if err != nil {
		return err
	}
	d := c.dir(pid)
	if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("chaos: cgroup: %w", err)
	}
	quota := max(int64(fraction*float64(period.Microseconds())), 1000) // the kernel's minimum is 1 ms
	for _, w := range [][2]string{
		{"cpu.cfs_period_us", strconv.FormatInt(period.Microseconds(), 10)},
		{"cpu.cfs_quota_us", strconv.FormatInt(quota, 10)},
		{"cgroup.procs", strconv.Itoa(pid)},
	} {
		if err := os.WriteFile(filepath.Join(d, w[0]), []byte(w[1]), 0o644); err != nil {
			_ = os.Remove(d)
			return fmt.Errorf("chaos: cgroup %s: %w", w[0], err)
		}
	}
	c.mu.Lock()
	c.prev[pid] = prev
	c.mu.Unlock()
	return nil
}

// Unlimit implements Limiter: the process goes back to its cgroup and the
// limiting one is removed (also when the process has died).
func (c *cgroupLimiter) Unlimit(pid int) error {
	c.mu.Lock()
	prev, ok := c.prev[pid]
	delete(c.prev, pid)
	c.mu.Unlock()
	if !ok {
		return nil
	}
	err := os.WriteFile(filepath.Join(c.root, prev, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
	if errors.Is(err, os.ErrNotExist) {
		// The path /proc shows is not under this mount (a container
		// without a cgroup namespace): fall back to the mount's root.
		err = os.WriteFile(filepath.Join(c.root, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
	}
	if errors.Is(err, syscall.ESRCH) {
		err = nil // gone already
	}
	if rerr := os.Remove(c.dir(pid)); err == nil && rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = rerr
	}
	return err
}

// cpuCgroupOf returns the cpu cgroup of pid, relative to the controller's
// mount, from /proc/<pid>/cgroup.
func cpuCgroupOf(pid int) (string, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controller-list:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) == 3 && slices.Contains(strings.Split(parts[1], ","), "cpu") {
			return parts[2], nil
		}
	}
	return "", fmt.Errorf("chaos: no cpu cgroup for pid %d", pid)
}
