package chaos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/chaos/powercuts"
)

// TestDefaultOptionsPerScenario: each scenario's package adapts the
// common defaults as the harness always has (the cluster's size, the
// fault's length, the power-cut timings), and every default is valid.
func TestDefaultOptionsPerScenario(t *testing.T) {
	type want struct {
		shards, spares, rf int
		fault, restart     time.Duration
	}
	for name, w := range map[string]want{
		"slow-follower":       {1, 0, 0, 60 * time.Second, 5 * time.Second},
		"slow-network":        {1, 0, 0, 20 * time.Second, 5 * time.Second},
		"slow-network-egress": {1, 0, 0, 20 * time.Second, 5 * time.Second},
		"crash-leader":        {1, 0, 0, 10 * time.Second, 5 * time.Second},
		"rebalance":           {12, 1, 3, 10 * time.Second, 5 * time.Second},
		"replace-dead":        {12, 1, 3, 10 * time.Second, 5 * time.Second},
		"move-killed":         {4, 1, 3, 10 * time.Second, 5 * time.Second},
		"random":              {1, 1, 3, 60 * time.Second, 5 * time.Second},
		"disk-full":           {1, 0, 0, 10 * time.Second, 5 * time.Second},
		"power-cut":           {1, 0, 0, 5 * time.Second, time.Second},
		"power-cut-snapshot":  {1, 0, 0, 5 * time.Second, time.Second},
		"power-cut-move":      {2, 1, 3, 5 * time.Second, time.Second},
		"power-cut-map":       {2, 1, 3, 5 * time.Second, time.Second},
	} {
		o := DefaultOptions(name)
		require.Equal(t, w, want{o.Shards, o.Spares, o.RF, o.Fault, o.Restart}, name)
		require.Equal(t, name, o.Scenario)
		require.NoError(t, o.Validate(), name)
		if name == "power-cut-snapshot" {
			require.Equal(t, powercuts.SnapshotArgs, o.ServerArgs)
		} else {
			require.Empty(t, o.ServerArgs, name)
		}
	}
	require.Equal(t, 2<<30, int(scenarios["disk-full"].SmallDisks), "disk-full mounts its small disks")
	for _, name := range append(ScenarioNames(), PowerCutNames()...) {
		require.NotEmpty(t, About(name), name)
		require.Zero(t, scenarios[name].SmallDisks, name)
	}
	require.True(t, IsPowerCut("power-cut-map"))
	require.False(t, IsPowerCut("crash-leader"))
}

// TestRunRefusesBadOptions: an unknown scenario or invalid options end
// the run before any server starts or any file is written.
func TestRunRefusesBadOptions(t *testing.T) {
	o := DefaultOptions("no-such-scenario")
	o.Bin, o.Dir = serverBin, t.TempDir()
	_, err := Run(o)
	require.ErrorIs(t, err, ErrUnknownScenario)
	o = DefaultOptions("crash-leader")
	o.Bin, o.Dir = serverBin, t.TempDir()+"/run"
	o.CPUFraction = 0
	_, err = Run(o)
	require.Error(t, err)
	require.NoDirExists(t, o.Dir)
}
