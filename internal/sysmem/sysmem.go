// Package sysmem reads how much memory this machine gives the process and
// parses sizes written for people ("512MiB", "2GB"), for kvsserver's
// -max-memory.
package sysmem

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Machine returns the bytes of memory the process may use: the machine's
// (MemTotal of /proc/meminfo), or its cgroup's limit if that is lower
// (cgroup v2 memory.max, or v1 memory.limit_in_bytes).
func Machine() (int64, error) {
	total, err := memTotal("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if lim, ok := cgroupLimit(f); ok && lim < total {
			total = lim
		}
	}
	return total, nil
}

// memTotal reads MemTotal from a meminfo file.
func memTotal(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("sysmem: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && fields[0] == "MemTotal:" && fields[2] == "kB" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("sysmem: %s: %w", path, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("sysmem: no MemTotal in %s", path)
}

// cgroupLimit reads a cgroup memory limit file. It reports no limit for a
// missing file, "max" (v2), and the huge number by which v1 says none.
func cgroupLimit(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0, false
	}
	return n, true
}

var units = []struct {
	suffix string
	bytes  int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

// ErrSize is wrapped by ParseSize's errors.
var ErrSize = errors.New("sysmem: not a size")

// ParseSize parses a size in bytes: a whole number, or a number (which may
// have a fraction) with a unit: B, KiB, MiB, GiB, TiB (powers of 1024), KB,
// MB, GB, TB (powers of 1000), or K, M, G, T (as Redis's maxmemory: powers
// of 1024). Case matters not; spaces between are allowed.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range units {
		if len(t) > len(u.suffix) && strings.EqualFold(t[len(t)-len(u.suffix):], u.suffix) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.bytes
			break
		}
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil && n >= 0 && n <= (1<<62)/mult {
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || f*float64(mult) >= 1<<62 || t == "" || strings.ContainsAny(t, "eExXpPnN") {
		return 0, fmt.Errorf("%w: %q (want bytes, or a number with B, KiB, MiB, GiB, KB, MB or GB)", ErrSize, s)
	}
	return int64(f * float64(mult)), nil
}
