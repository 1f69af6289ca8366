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

// shares measures the CPU shares two processes get over the same d.
func shares(t *testing.T, a, b int, d time.Duration) (float64, float64) {
	t.Helper()
	beforeA, beforeB := cpuTime(t, a), cpuTime(t, b)
	time.Sleep(d)
	return float64(cpuTime(t, a)-beforeA) / float64(d), float64(cpuTime(t, b)-beforeB) / float64(d)
}

// sharesWithRoom measures like shares, again (up to 5 windows) while the
// reference b gets under a third of a CPU: the rest of the machine (the
// test suite's other packages) left too little to compare with.
func sharesWithRoom(t *testing.T, a, b int, d time.Duration) (float64, float64) {
	t.Helper()
	for try := 1; ; try++ {
		sa, sb := shares(t, a, b, d)
		if sb > 0.3 || try == 5 {
			require.Greater(t, sb, 0.3, "the unlimited reference got too little CPU to compare in %d windows", try)
			return sa, sb
		}
	}
}

// liftedFloor is the least share of a CPU a lifted process must get in
// some window: twice the 10% it was held to, which a process still held
// cannot reach.
const liftedFloor = 0.2

// testLimiter: a spinning process held to 10% of a CPU gets about that
// (under 16%: /proc counts in hundredths of a second, and a period can be
// split across the window's ends) and under half of what another spinning
// process, unlimited, gets over the same window; and once lifted it gets
// at least half of what that one gets, and at least liftedFloor.
// Comparing with a reference measured at the same time keeps the test's
// verdict when the rest of the machine is busy. Once lifted, the shares
// are measured again (up to 5 windows) while the lifted process gets
// less: under the test suite's other packages, two spinning processes
// were seen to get 0.42 and 0.84 of a CPU over one window.
func testLimiter(t *testing.T, lim Limiter) {
	pid, ref := busyProcess(t), busyProcess(t)
	require.NoError(t, lim.Limit(pid, 0.10))
	t.Cleanup(func() { _ = lim.Unlimit(pid) }) // also when a check below fails
	limited, refLimited := sharesWithRoom(t, pid, ref, 2*time.Second)
	require.NoError(t, lim.Unlimit(pid))
	time.Sleep(200 * time.Millisecond) // a throttled period runs out
	var again, refAgain float64
	for try := 1; try <= 5; try++ {
		again, refAgain = sharesWithRoom(t, pid, ref, 2*time.Second)
		if again > refAgain/2 && again > liftedFloor {
			break
		}
	}
	t.Logf("%s: limited to 10%%: %.2f of a CPU (reference %.2f); lifted: %.2f (reference %.2f)",
		lim.Name(), limited, refLimited, again, refAgain)
	require.Less(t, limited, 0.16)
	require.Less(t, limited, refLimited/2)
	require.Greater(t, again, refAgain/2)
	require.Greater(t, again, liftedFloor)
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
