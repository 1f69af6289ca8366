package cpulimit

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// busyProcess starts a shell that spins for ever and returns its pid; the
// test kills it by that pid when it ends.
func busyProcess(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd.Process.Pid
}

// cpuTime returns the CPU time pid used so far (utime + stime).
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	require.NoError(t, err)
	// The fields after the command's ")" start at field 3 (state).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, err := strconv.ParseInt(f[11], 10, 64)
	require.NoError(t, err)
	stime, err := strconv.ParseInt(f[12], 10, 64)
	require.NoError(t, err)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// share measures the CPU share pid gets over d.
func share(t *testing.T, pid int, d time.Duration) float64 {
	t.Helper()
	before := cpuTime(t, pid)
	time.Sleep(d)
	return float64(cpuTime(t, pid)-before) / float64(d)
}

// testLimiter: a spinning process held to 10% of a CPU gets about that
// (under 16%: /proc counts in hundredths of a second, and a period can be
// split across the window's ends) and under half of what it gets unlimited,
// and gets its share back when lifted. Another busy process on the machine
// can take the unlimited share down to a third of a CPU, so the comparison
// is with the limit, over a 2 s window, not a fixed ratio to that share.
func testLimiter(t *testing.T, lim Limiter) {
	pid := busyProcess(t)
	free := share(t, pid, time.Second)
	require.Greater(t, free, 0.3, "the busy process got too little CPU to compare")
	require.NoError(t, lim.Limit(pid, 0.10))
	t.Cleanup(func() { _ = lim.Unlimit(pid) }) // also when a check below fails
	limited := share(t, pid, 2*time.Second)
	require.NoError(t, lim.Unlimit(pid))
	time.Sleep(200 * time.Millisecond) // a throttled period runs out
	again := share(t, pid, 2*time.Second)
	t.Logf("%s: unlimited %.2f, limited to 10%%: %.2f, lifted: %.2f of a CPU", lim.Name(), free, limited, again)
	require.Less(t, limited, 0.16)
	require.Less(t, limited, free/2)
	require.Greater(t, again, 0.3)
}

func TestCgroupLimiter(t *testing.T) {
	lim, err := newCgroupLimiter(CgroupRoot)
	if err != nil {
		t.Skipf("cgroup v1 cpu controller not writable here: %v", err)
	}
	testLimiter(t, lim)
}

func TestDutyCycleLimiter(t *testing.T) {
	testLimiter(t, newDutyLimiter())
}
