package chaos

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/chaos/verdict"
)

// checksNamed returns the checks of res whose names start with prefix.
func checksNamed(res *verdict.Result, prefix string) []verdict.Check {
	var out []verdict.Check
	for _, c := range res.Checks {
		if strings.HasPrefix(c.Name, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// slowNetworkStoreChecks are the slow-network checks that measure what
// the store adds to a slow link, which each planted fault must fail and
// the real server pass (TestScenariosShort): the open load's p99 at the
// longest delay, and the entries the leader's gate held under it.
var slowNetworkStoreChecks = []string{"open load, open +250ms: batch latency p99", "open load, open +250ms: entries the leader's commit gate held"}

// TestSlowNetworkCatchesPlantedFaults is the slow-network verdict's own
// control: a server built with -tags planted_secondtrip pays a second
// round trip to the quorum in every write, and one built with -tags
// planted_alwayshold holds entries in its commit gate whether holding
// pays or not (the gate before issue 33). Each must fail the check that
// measures its fault.
func TestSlowNetworkCatchesPlantedFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two more kvsservers")
	}
	for _, tc := range []struct{ tag, check string }{
		{"planted_secondtrip", slowNetworkStoreChecks[0]},
		{"planted_alwayshold", slowNetworkStoreChecks[1]},
	} {
		t.Run(tc.tag, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "kvsserver-"+tc.tag)
			out, err := exec.Command("go", "build", "-tags", tc.tag, "-o", bin, "github.com/batchkv/batchkv/cmd/kvsserver").CombinedOutput()
			require.NoError(t, err, "%s", out)
			o := shortOptions(t, "slow-network")
			o.Bin = bin
			res, err := Run(o)
			require.NoError(t, err)
			for _, c := range res.Checks {
				t.Logf("%v %s: %s (target %s)", c.Pass, c.Name, c.Got, c.Target)
			}
			cs := checksNamed(res, tc.check)
			require.Len(t, cs, 1, "the check %q is missing", tc.check)
			require.False(t, cs[0].Pass, "%s passed a server with %s: %s", tc.check, tc.tag, cs[0].Got)
		})
	}
}
