package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/chaos/experiment"
	"github.com/batchkv/batchkv/chaos/load"
	"github.com/batchkv/batchkv/chaos/procs"
)

// serverBin is the kvsserver binary TestMain builds for the scenarios.
var serverBin string

func TestMain(m *testing.M) { os.Exit(procs.RunWithServerBinary(m, &serverBin)) }

// shortOptions shrinks a scenario to a few seconds and a light load.
func shortOptions(t *testing.T, name string) experiment.Options {
	o := DefaultOptions(name)
	o.Bin, o.Dir = serverBin, t.TempDir()
	o.Warmup, o.Baseline, o.Fault, o.Recovery = 500*time.Millisecond, 1500*time.Millisecond, 2*time.Second, 2*time.Second
	o.Latencies, o.Lag = []time.Duration{100 * time.Millisecond, 250 * time.Millisecond}, time.Second
	o.Restart, o.Pause, o.Interval = time.Second, 3*time.Second, 2*time.Second
	switch name {
	case "random":
		o.Fault = 6 * time.Second
	case "slow-network", "slow-network-egress":
		// The open load's phases are half a step, and each settles for 2 s
		// before it is measured: longer than the commit gate takes to see
		// that a link slowed (its floor's span, 1 s, and a few measures).
		o.Fault = 8 * time.Second
	}
	if name == "slow-network" {
		// Only the step that slowNetworkStoreChecks measure, for the real
		// server (TestScenariosShort) and the planted faults alike
		// (TestSlowNetworkCatchesPlantedFaults); slow-network-egress
		// runs both steps.
		o.Latencies = []time.Duration{250 * time.Millisecond}
	}
	o.Bulk = load.BulkConfig{Goroutines: 16, Batch: 256, Keys: 256, Reads: 0.95, ValueSize: 32, AttemptTimeout: 5 * time.Second}
	o.Checked = load.CheckedConfig{Clients: 4, Keys: 50, MaxOps: 4}
	if testing.Verbose() {
		o.Progress = os.Stdout
	}
	return o
}

// TestScenariosShort runs every scenario for a few seconds. The
// performance targets need the full durations and a quiet machine, so
// here only the safety checks must pass: the history is linearizable,
// no acknowledged write is lost, and the replicas converge.
func TestScenariosShort(t *testing.T) {
	for _, name := range ScenarioNames() {
		t.Run(name, func(t *testing.T) {
			o := shortOptions(t, name)
			res, err := Run(o)
			require.NoError(t, err)
			safety := 0
			for _, c := range res.Checks {
				t.Logf("%v %s: %s (target %s)", c.Pass, c.Name, c.Got, c.Target)
				if strings.HasPrefix(c.Name, "replicas converge") || strings.HasPrefix(c.Name, "no acknowledged write lost") ||
					strings.HasPrefix(c.Name, "checked history is linearizable") {
					require.True(t, c.Pass, "%s: %s", c.Name, c.Got)
					safety++
				}
			}
			require.Equal(t, 3, safety, "a safety check is missing")
			if name == "slow-network" {
				// The control of TestSlowNetworkCatchesPlantedFaults: the
				// checks that catch the planted faults pass the real server.
				for _, prefix := range slowNetworkStoreChecks {
					cs := checksNamed(res, prefix)
					require.Len(t, cs, 1, "the check %q is missing", prefix)
					require.True(t, cs[0].Pass, "%s: %s", cs[0].Name, cs[0].Got)
				}
			}
			for _, f := range []string{"summary.md", "timeline.csv", "timeline.png", "history.csv", "status.csv", "events.csv"} {
				st, err := os.Stat(filepath.Join(o.Dir, f))
				require.NoError(t, err)
				require.NotZero(t, st.Size(), f)
			}
		})
	}
}
