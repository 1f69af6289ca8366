// Package faults holds the chaos scenarios that fault servers and links
// under the loads: a CPU-starved follower, slow Raft links, kill -9 of the
// leader or a follower, partitions, a paused leader, and random faults
// one after another.
package faults

import (
	"time"

	"github.com/batchkv/batchkv/chaos/experiment"
)

// Scenarios returns the scenarios of this package by name.
func Scenarios() map[string]experiment.Scenario {
	return map[string]experiment.Scenario{
		"slow-follower": {About: "one follower limited to a sliver of a CPU (the Raft seed's 0.02-CPU container)", Inject: slowFollower,
			Defaults: func(o *experiment.Options) { o.Fault = 60 * time.Second }},
		"slow-network": {About: "latency added to every Raft link of the leader, both ways, in steps, under a closed load (a follower lags meanwhile) and then an open one at half the baseline",
			Inject: slowLink{}.inject, Defaults: func(o *experiment.Options) { o.Fault = 20 * time.Second }},
		"slow-network-egress": {About: "as slow-network, but only what the leader sends is late (the seed's netem delay on the leader's egress)",
			Inject: slowLink{egressOnly: true}.inject, Defaults: func(o *experiment.Options) { o.Fault = 20 * time.Second }},
		"crash-leader":   {About: "kill -9 the leader, restart it after a delay", Inject: crashLeader},
		"crash-follower": {About: "kill -9 a follower, restart it after a delay", Inject: crashFollower},
		"partition":      {About: "cut the leader off from its peers, heal; then a one-way partition", Inject: partition},
		"pause":          {About: "SIGSTOP the leader past the election timeout, then SIGCONT", Inject: pause},
		"random": {About: "a random fault every interval, healed before the next (Jepsen's shape), moves of a replica to a spare server among them", Inject: random,
			Defaults: func(o *experiment.Options) { o.Spares, o.RF, o.Fault = 1, 3, 60*time.Second }},
	}
}
