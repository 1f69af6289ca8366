package rawsock

import (
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// processCPU is the CPU time the test process has used.
func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), err
}

// readCalls is how many read system calls the test process has made
// (syscr in /proc/self/io), or -1 where the kernel does not count them.
func readCalls() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "syscr: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// readLate reads from w while the peer writes "late" after delay, and
// returns the bytes read, how long the Read took, and the CPU the
// process used and the read system calls it made meanwhile (-1 where
// they are not counted; the test's other goroutines sleep).
func readLate(t *testing.T, w net.Conn, peer *net.TCPConn, delay time.Duration) (got string, took, cpu time.Duration, reads int64) {
	t.Helper()
	type result struct {
		got       string
		took, cpu time.Duration
		reads     int64
		err       error
	}
	done := make(chan result, 1)
	started := make(chan struct{})
	go func() {
		buf := make([]byte, 16)
		before, err := processCPU()
		if err != nil {
			close(started)
			done <- result{err: err}
			return
		}
		readsBefore := readCalls()
		// readCalls' own reads, as counted between two calls of it.
		overhead := readCalls() - readsBefore
		readsBefore += overhead
		start := time.Now()
		close(started)
		n, err := w.Read(buf)
		took := time.Since(start)
		after, cpuErr := processCPU()
		if err == nil {
			err = cpuErr
		}
		reads := int64(-1)
		if readsBefore >= 0 {
			reads = readCalls() - readsBefore - overhead
		}
		done <- result{string(buf[:n]), took, after - before, reads, err}
	}()
	<-started
	time.Sleep(delay)
	_, err := peer.Write([]byte("late"))
	require.NoError(t, err)
	r := <-done
	require.NoError(t, r.err)
	return r.got, r.took, r.cpu, r.reads
}

// TestReadSpinPollsThenSleeps: a Read that finds no data polls for up to
// its spin, spending its thread's CPU, then sleeps until the data comes;
// with no spin it sleeps at once.
func TestReadSpinPollsThenSleeps(t *testing.T) {
	w, peer := pair(t)
	sp := w.(ReadSpinner)

	sp.SetReadSpin(40 * time.Millisecond)
	got, took, cpu, reads := readLate(t, w, peer, 80*time.Millisecond)
	t.Logf("with a 40 ms spin: %v of CPU, %d reads", cpu, reads)
	require.Equal(t, "late", got)
	require.GreaterOrEqual(t, took, 70*time.Millisecond)
	// Polling yields between tries, so other busy threads may take most
	// of the 40 ms: beside two busy loops the Read got 0.4-1.1 ms of CPU
	// for 32-52 tries, alone 40 ms for about 5,000. So, where the kernel
	// counts read calls, the tries are counted, not the CPU. Sleeping
	// takes microseconds and two reads (the bounds below leave room for
	// the process's other threads).
	if reads >= 0 {
		require.GreaterOrEqual(t, reads, int64(10), "the Read polled")
	} else {
		require.Greater(t, cpu, 2*time.Millisecond, "the Read polled")
	}
	require.Less(t, cpu, 70*time.Millisecond, "the Read slept after its spin")

	sp.SetReadSpin(0)
	got, _, cpu, reads = readLate(t, w, peer, 40*time.Millisecond)
	t.Logf("with no spin: %v of CPU, %d reads", cpu, reads)
	require.Equal(t, "late", got)
	require.Less(t, cpu, 10*time.Millisecond, "the Read slept at once")
	if reads >= 0 {
		require.LessOrEqual(t, reads, int64(5), "the Read slept at once")
	}
}

// TestReadSpinEndsWithTheData: data that comes while a Read polls ends the
// Read at once, not at the end of its spin.
func TestReadSpinEndsWithTheData(t *testing.T) {
	w, peer := pair(t)
	w.(ReadSpinner).SetReadSpin(5 * time.Second)
	got, took, _, _ := readLate(t, w, peer, 20*time.Millisecond)
	require.Equal(t, "late", got)
	require.Less(t, took, 2*time.Second)
}

// TestReadSpinKeepsDeadlinesAndClose: a polling Read still ends at its
// deadline, and on Close, at the latest a spin late.
func TestReadSpinKeepsDeadlinesAndClose(t *testing.T) {
	w, _ := pair(t)
	w.(ReadSpinner).SetReadSpin(30 * time.Millisecond)
	require.NoError(t, w.SetReadDeadline(time.Now().Add(5*time.Millisecond)))
	start := time.Now()
	_, err := w.Read(make([]byte, 16))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	took := time.Since(start)
	require.GreaterOrEqual(t, took, 5*time.Millisecond)
	require.Less(t, took, 30*time.Millisecond+time.Second, "a spin late at the most (and a second of slack)")

	require.NoError(t, w.SetReadDeadline(time.Time{}))
	w.(ReadSpinner).SetReadSpin(200 * time.Millisecond)
	closeEndsARead(t, w) // closed well inside the poll
}

// TestReadSpinEndsWhenTurnedOff: SetReadSpin(0) ends a poll under way,
// and the Read sleeps until its data comes.
func TestReadSpinEndsWhenTurnedOff(t *testing.T) {
	w, peer := pair(t)
	sp := w.(ReadSpinner)
	sp.SetReadSpin(time.Hour)
	go func() {
		time.Sleep(20 * time.Millisecond)
		sp.SetReadSpin(0)
	}()
	got, took, cpu, _ := readLate(t, w, peer, 300*time.Millisecond)
	require.Equal(t, "late", got)
	require.GreaterOrEqual(t, took, 250*time.Millisecond)
	require.Less(t, cpu, 200*time.Millisecond, "the Read slept once the spin was off")
}
