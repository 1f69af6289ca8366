// Package cpulimit holds a process to a fraction of one CPU, for the
// chaos scenarios that starve a server (slow-follower, random): with a
// cgroup v1 CFS quota where the cpu controller is writable, else with a
// SIGSTOP/SIGCONT duty cycle that needs no privileges.
package cpulimit

import (
	"fmt"
	"time"
)

// A Limiter holds a process to a fraction of one CPU until Unlimit.
type Limiter interface {
	// Limit holds pid to fraction of one CPU.
	Limit(pid int, fraction float64) error
	// Unlimit gives pid its CPU back; it is a no-op for a pid not limited.
	Unlimit(pid int) error
	// Name says how it limits, for the report.
	Name() string
}

// CgroupRoot is where the cgroup v1 cpu controller is mounted.
const CgroupRoot = "/sys/fs/cgroup/cpu"

// period is the CFS period of the limiting cgroups, and the duty cycle's.
const period = 100 * time.Millisecond

// New returns the cgroup limiter when cgroups under root are writable,
// else the SIGSTOP/SIGCONT duty cycle.
func New(root string) Limiter {
	if cg, err := newCgroupLimiter(root); err == nil {
		return cg
	}
	return newDutyLimiter()
}

// noProcess is the error of Limit for a pid that names no process (kill(0)
// would stop this process's whole group).
func noProcess(pid int) error { return fmt.Errorf("chaos: no process to limit (pid %d)", pid) }
