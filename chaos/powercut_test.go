package chaos

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/chaos/experiment"
	"github.com/batchkv/batchkv/chaos/verdict"
	"github.com/batchkv/batchkv/internal/powercut"
)

// powerCutOptions shrinks a power-cut scenario to a few seconds, with the
// servers' data dirs on a power-cut filesystem in mode.
func powerCutOptions(t *testing.T, name string, mode powercut.Mode) experiment.Options {
	o := shortOptions(t, name)
	fs := powercut.MountForTest(t, mode)
	o.DataRoot = fs.Dir()
	o.PowerCut = func() (string, error) {
		rep, err := fs.Cut()
		return rep.String(), err
	}
	o.Fault, o.Restart = 2*time.Second, 500*time.Millisecond
	return o
}

// safety returns the three safety checks of a run by name prefix.
func safety(t *testing.T, res *verdict.Result) map[string]verdict.Check {
	out := map[string]verdict.Check{}
	for _, c := range res.Checks {
		t.Logf("%v %s: %s (target %s)", c.Pass, c.Name, c.Got, c.Target)
		for _, p := range []string{"replicas converge", "no acknowledged write lost", "checked history is linearizable"} {
			if strings.HasPrefix(c.Name, p) {
				out[p] = c
			}
		}
	}
	for _, f := range res.Figures {
		t.Logf("%s: %s", f.Name, f.Value)
	}
	require.Len(t, out, 3, "a safety check is missing")
	return out
}

// TestPowerCutLosesNothing cuts the power of every server's disk at once
// under the checked load, RF=3 (strict POSIX filesystem) and RF=1: every
// acknowledged write reads back, the history is linearizable, the
// replicas converge.
func TestPowerCutLosesNothing(t *testing.T) {
	for _, c := range []struct {
		name       string
		servers    int
		scenarioOf string
	}{
		{"RF=3", 3, "power-cut"},
		{"RF=1", 1, "power-cut"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := powerCutOptions(t, c.scenarioOf, powercut.Strict)
			o.Servers, o.RF = c.servers, c.servers
			res, err := Run(o)
			require.NoError(t, err)
			for name, check := range safety(t, res) {
				require.True(t, check.Pass, "%s: %s", name, check.Got)
			}
		})
	}
}

// TestPowerCutCatchesUnsafeNoSync is the negative control: with
// -unsafe-nosync the servers acknowledge writes they never synced, and the
// same checks must report the writes the cut lost.
func TestPowerCutCatchesUnsafeNoSync(t *testing.T) {
	if testing.Short() {
		t.Skip("the cluster that lost its log answers nothing until the final reads time out")
	}
	o := powerCutOptions(t, "power-cut", powercut.Strict)
	o.ServerArgs = append(o.ServerArgs, "-unsafe-nosync")
	// Every file the cut discards was never synced, so the servers come
	// back with no log and no leader: the final reads would wait out
	// their minute. The checks fail here because no acknowledged write
	// reads back at all; TestPowerCutCatchesAckBeforeSync is the control
	// for writes lost by a cluster that serves again.
	o.FinalReads = 10 * time.Second
	res, err := Run(o)
	require.NoError(t, err)
	checks := safety(t, res)
	require.False(t, checks["no acknowledged write lost"].Pass && checks["checked history is linearizable"].Pass,
		"the checks missed the acknowledged writes a cut loses under -unsafe-nosync")
}

// TestPowerCutCatchesAckBeforeSync is the planted-bug control: servers
// built with -tags planted_latesync acknowledge a write before its log
// is synced (they sync at most once per planted.LateSyncPeriod), and a cut
// under load must show lost acknowledged writes. Whether a cut loses any
// depends on where it falls against the last sync: once in go test
// ./... (2026-11-29) a cut lost none and the checks rightly passed, so
// up to 3 cuts are made, and one must be caught.
func TestPowerCutCatchesAckBeforeSync(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a second kvsserver")
	}
	bin := filepath.Join(t.TempDir(), "kvsserver-latesync")
	out, err := exec.Command("go", "build", "-tags", "planted_latesync", "-o", bin, "github.com/batchkv/batchkv/cmd/kvsserver").CombinedOutput()
	require.NoError(t, err, "%s", out)
	caught := false
	for try := 1; try <= 3 && !caught; try++ {
		o := powerCutOptions(t, "power-cut", powercut.Strict)
		o.Bin = bin
		res, err := Run(o)
		require.NoError(t, err)
		checks := safety(t, res)
		caught = !checks["no acknowledged write lost"].Pass || !checks["checked history is linearizable"].Pass
		t.Logf("cut %d: lost acknowledged writes found: %v", try, caught)
	}
	require.True(t, caught, "the checks missed the acknowledged writes a cut loses when the log acknowledges before it syncs, in 3 cuts")
}
