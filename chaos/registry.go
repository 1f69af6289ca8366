package chaos

import (
	"maps"
	"slices"

	"github.com/batchkv/batchkv/chaos/diskfull"
	"github.com/batchkv/batchkv/chaos/experiment"
	"github.com/batchkv/batchkv/chaos/faults"
	"github.com/batchkv/batchkv/chaos/moves"
	"github.com/batchkv/batchkv/chaos/powercuts"
)

// scenarioOrder lists the scenarios as `chaos.sh all` runs them.
var scenarioOrder = []string{"slow-follower", "slow-network", "slow-network-egress", "crash-leader", "crash-follower", "partition", "pause", "rebalance", "replace-dead", "move-killed", "random"}

// scenarios holds every scenario by name: those of `all`, disk-full and
// the power-cut ones.
var scenarios = func() map[string]experiment.Scenario {
	all := map[string]experiment.Scenario{}
	for _, family := range []map[string]experiment.Scenario{faults.Scenarios(), moves.Scenarios(), diskfull.Scenarios(), powercuts.Scenarios()} {
		maps.Copy(all, family)
	}
	return all
}()

// ScenarioNames returns every scenario's name, in the order `all` runs them.
func ScenarioNames() []string { return slices.Clone(scenarioOrder) }

// PowerCutNames returns the power-cut scenarios (not part of `all`: they
// need root and FUSE).
func PowerCutNames() []string { return slices.Clone(powercuts.Names) }

// DiskFaultNames returns the scenarios that fault a server's disk (not
// part of `all`: they mount a tmpfs, which needs root).
func DiskFaultNames() []string { return slices.Sorted(maps.Keys(diskfull.Scenarios())) }

// IsPowerCut reports whether name is a power-cut scenario.
func IsPowerCut(name string) bool { return slices.Contains(powercuts.Names, name) }

// About describes a scenario.
func About(name string) string { return scenarios[name].About }

// DefaultOptions returns the defaults of scenario: durations that finish
// within a few minutes (experiment.DefaultOptions), adapted to the
// scenario.
func DefaultOptions(scenario string) experiment.Options {
	o := experiment.DefaultOptions()
	o.Scenario = scenario
	if sc, ok := scenarios[scenario]; ok && sc.Defaults != nil {
		sc.Defaults(&o)
	}
	return o
}
