// Package procstat reads this process's resource use: CPU time and resident
// memory, so that servers and load clients can report their own utilization
// every second instead of someone watching htop.
package procstat

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// Sample is a reading of the process's resource use at one instant.
type Sample struct {
	At      time.Time
	CPU     time.Duration // user + system CPU time used so far
	RSS     int64         // resident set size now, in bytes
	PeakRSS int64         // largest resident set size so far, in bytes
}

// Read takes a sample. Fields it cannot read are left zero.
func Read() Sample {
	s := Sample{At: time.Now()}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		s.PeakRSS = ru.Maxrss * 1024 // kilobytes on Linux
	}
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := bytes.Fields(b); len(f) > 1 {
			if pages, err := strconv.ParseInt(string(f[1]), 10, 64); err == nil {
				s.RSS = pages * int64(os.Getpagesize())
			}
		}
	}
	return s
}

// CPUPercent returns the CPU used between two samples as a percentage of
// one core (200 means two cores busy).
func CPUPercent(from, to Sample) float64 {
	wall := to.At.Sub(from.At)
	if wall <= 0 {
		return 0
	}
	return 100 * float64(to.CPU-from.CPU) / float64(wall)
}
