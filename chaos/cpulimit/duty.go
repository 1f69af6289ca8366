package cpulimit

import (
	"sync"
	"syscall"
	"time"
)

// dutyLimiter runs a process for fraction of every period and stops it
// (SIGSTOP) for the rest: coarser than a cgroup, but needs no privileges.
type dutyLimiter struct {
	mu    sync.Mutex
	stops map[int]chan struct{}
}

func newDutyLimiter() *dutyLimiter { return &dutyLimiter{stops: map[int]chan struct{}{}} }

// Name implements Limiter.
func (d *dutyLimiter) Name() string { return "SIGSTOP/SIGCONT duty cycle" }

// Limit implements Limiter.
func (d *dutyLimiter) Limit(pid int, fraction float64) error {
	if pid <= 0 { // kill(0) would stop this process's whole group
		return noProcess(pid)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		return err
	}
	run := time.Duration(fraction * float64(period))
	stop := make(chan struct{})
	d.mu.Lock()
	d.stops[pid] = stop
	d.mu.Unlock()
	go func() {
		for {
			_ = syscall.Kill(pid, syscall.SIGCONT)
			select {
			case <-stop:
				return
			case <-time.After(run):
			}
			_ = syscall.Kill(pid, syscall.SIGSTOP)
			select {
			case <-stop:
				_ = syscall.Kill(pid, syscall.SIGCONT)
				return
			case <-time.After(period - run):
			}
		}
	}()
	return nil
}

// Unlimit implements Limiter.
func (d *dutyLimiter) Unlimit(pid int) error {
	d.mu.Lock()
	stop, ok := d.stops[pid]
	delete(d.stops, pid)
	d.mu.Unlock()
	if ok {
		close(stop)
	}
	return nil
}
