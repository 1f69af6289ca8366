package verdict

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/chaos/timeline"
)

// ratioRun returns a timeline snapshot with a 15 s baseline at 1000 ops/s
// and a 15 s fault window with the given seconds, and that window.
func ratioRun(fault []uint64) (timeline.Snapshot, timeline.Window) {
	var s timeline.Snapshot
	for range 15 {
		s.Seconds = append(s.Seconds, timeline.Second{Ops: 1000})
	}
	for _, n := range fault {
		s.Seconds = append(s.Seconds, timeline.Second{Ops: n})
	}
	s.Windows = append(s.Windows, timeline.Window{From: 0, To: 15 * time.Second, Label: timeline.Baseline})
	w := timeline.Window{From: 15 * time.Second, To: time.Duration(15+len(fault)) * time.Second, Label: "fault"}
	s.Windows = append(s.Windows, w)
	return s, w
}

// TestRatioCheckCatchesSlowWindowsAndStalls: a fault window whose median
// second is below the threshold fails, and so does one whose median is
// fine but with more than a fifth of its seconds under half the
// baseline's median (stalls); a window that only wobbles passes.
func TestRatioCheckCatchesSlowWindowsAndStalls(t *testing.T) {
	results := func(fault []uint64) []bool {
		s, w := ratioRun(fault)
		var r Result
		r.RatioCheck(s, "throughput", w, 0.75)
		var pass []bool
		for _, c := range r.Checks {
			pass = append(pass, c.Pass)
		}
		return pass
	}
	wobbly := []uint64{800, 1200, 900, 1100, 700, 1000, 950, 1050, 850, 1150, 600, 1000, 900, 1000, 1100}
	require.Equal(t, []bool{true, true}, results(wobbly))
	slow := []uint64{700, 700, 650, 720, 700, 690, 710, 700, 700, 705, 695, 700, 700, 700, 700}
	require.Equal(t, []bool{false, true}, results(slow), "median 70%")
	stalls := []uint64{1000, 0, 1000, 1000, 100, 1000, 1000, 50, 1000, 1000, 0, 1000, 1000, 1000, 1000}
	require.Equal(t, []bool{true, false}, results(stalls), "4 stalled seconds of 15")
}

// TestRatioCheckCountsHealthyPhasesAsBaseline: the seconds of a healthy
// phase between faults count as baseline with the first one's, so a
// fault window measured against a machine that slowed during the run is
// compared with both: 820 against a baseline of 1000 alone fails 85%,
// against 1000 and a later 900 (median 950) it passes.
func TestRatioCheckCountsHealthyPhasesAsBaseline(t *testing.T) {
	fault := []uint64{820, 820, 820, 820, 820, 820, 820, 820, 820, 820, 820, 820, 820, 820, 820}
	s, w := ratioRun(fault)
	var alone Result
	alone.RatioCheck(s, "alone", w, 0.85)
	require.False(t, alone.Checks[0].Pass)

	s, w = ratioRun(fault)
	for range 15 {
		s.Seconds = append(s.Seconds, timeline.Second{Ops: 900})
	}
	s.Windows = append(s.Windows, timeline.Window{From: 30 * time.Second, To: 45 * time.Second, Label: timeline.BaselineAgain})
	var after Result
	after.RatioCheck(s, "with the phase after", w, 0.85)
	require.True(t, after.Checks[0].Pass, after.Checks[0].Got)
	require.Contains(t, after.Checks[0].Got, "vs 950 ops/s")
}

// TestDecideFailsOnTheFirstFailedCheck: one failed check fails the
// verdict, and the reason names the first that failed.
func TestDecideFailsOnTheFirstFailedCheck(t *testing.T) {
	var r Result
	r.Check("a", "1", "1", true)
	r.Decide()
	require.True(t, r.Pass)
	r.Check("b", "2", "3", false)
	r.Check("c", "4", "5", false)
	r.Decide()
	require.False(t, r.Pass)
	require.Equal(t, "b: want 2, got 3", r.Reason)
}
