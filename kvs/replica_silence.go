package kvs

import (
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/wire"
)

// Failover after a silent failure. A leader that is paused, or whose
// packets vanish, leaves no trace but silence. Raft's followers notice it
// when their heartbeat timers fire, at random times up to three heartbeat
// timeouts after the last contact, and with pre-vote an election succeeds
// only once a majority has noticed: often 2 s or more with 800 ms
// timeouts.
//
// So a follower that has heard nothing from its leader for a heartbeat
// timeout asks the shard's other replicas (their Status RPC) how long it
// has been for them. If a majority, itself included, has heard nothing
// for a heartbeat timeout either, that is exactly the condition under
// which pre-vote would let an election through, and the follower calls
// one at once (a TimeoutNow to itself, as in replica_failover.go), taking
// its turn by its place in the shard's order. A follower that alone hears
// nothing (starved of CPU, or cut off itself) finds no majority and does
// nothing; a slow link that still delivers heartbeats within the timeout
// triggers nothing.

// silenceCheckEvery is how often a follower looks at its leader's silence.
const silenceCheckEvery = 100 * time.Millisecond

// watchSilence checks the leader's silence and calls an election when a
// majority has not heard from it for a heartbeat timeout.
func (g *replicaGroup) watchSilence() {
	defer g.wg.Done()
	tick := time.NewTicker(silenceCheckEvery)
	defer tick.Stop()
	var lastTry time.Time
	for {
		select {
		case <-g.stop:
			return
		case <-tick.C:
		}
		leader, _ := g.raft.LeaderWithID()
		if g.raft.State() != raft.Follower || leader == "" || time.Since(lastTry) < g.heartbeat ||
			time.Since(g.raft.LastContact()) < g.heartbeat {
			continue
		}
		lastTry = time.Now()
		ahead, ok := g.silentMajority(string(leader))
		if !ok {
			continue
		}
		if !g.electInTurn(time.Duration(ahead)*failoverStagger, lastTry, leader,
			"a majority has not heard from the leader for a heartbeat timeout: calling an election now") {
			return
		}
	}
}

// silentMajority asks the other replicas (not the leader) whether they
// have heard from leader within a heartbeat timeout. It says whether a
// majority, this replica included, has not, and how many of the silent
// replicas come before this one in the shard's order.
func (g *replicaGroup) silentMajority(leader string) (ahead int, ok bool) {
	silent := 1
	for _, r := range g.replicas {
		if r == g.self || r == leader {
			continue
		}
		st, err := client.Status(r, wire.StatusRequest{}, probeTimeout)
		if err != nil {
			continue
		}
		for _, s := range st.Shards {
			if s.Shard == g.shard && s.State != raft.Leader.String() && s.SinceContact >= g.heartbeat &&
				(s.Leader == "" || s.Leader == leader) {
				silent++
				if slices.Index(g.replicas, r) < slices.Index(g.replicas, g.self) {
					ahead++
				}
			}
		}
	}
	return ahead, silent > len(g.replicas)/2
}
