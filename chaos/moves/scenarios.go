// Package moves holds the chaos scenarios that change the cluster's
// membership under the loads: a server added and one removed
// (rebalance), a dead server replaced (replace-dead), and moves whose
// destination or source is killed midway (move-killed); and the evenness
// check of who holds the keys and leads the shards afterwards.
package moves

import "github.com/batchkv/batchkv/chaos/experiment"

// Scenarios returns the scenarios of this package by name.
func Scenarios() map[string]experiment.Scenario {
	return map[string]experiment.Scenario{
		"rebalance": {About: "add a 4th server to 3 and rebalance onto it, then remove one of the first 3 (RF=3, 12 shards)", Inject: rebalance,
			// Enough shards that 3 and 4 servers each get an equal share.
			Defaults: func(o *experiment.Options) { o.Shards, o.Spares, o.RF = 12, 1, 3 }},
		"replace-dead": {About: "kill -9 one of 3 servers for good and replace it with a new one: each of its replicas moves once (RF=3, 12 shards)", Inject: replaceDead,
			Defaults: func(o *experiment.Options) { o.Shards, o.Spares, o.RF = 12, 1, 3 }},
		"move-killed": {About: "kill -9 the destination of a shard move while it catches up, then the source of another, its shard's leader, once the destination votes", Inject: killedMidMove,
			Defaults: func(o *experiment.Options) { o.Shards, o.Spares, o.RF = 4, 1, 3 }},
	}
}
