package leadership

import (
	"time"

	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/kvs/replica/failover"
	"github.com/batchkv/batchkv/wire"
)

// Failover after a silent failure. A leader that is paused, or whose
// packets vanish, leaves no trace but silence. Raft's followers notice it
// when their heartbeat timers fire, at random times up to three heartbeat
// timeouts after the last contact, and with pre-vote an election succeeds
// only once a majority has noticed: often 2 s or more with 800 ms
// timeouts.
//
// So a follower that has heard nothing from its leader for a little less
// than a heartbeat timeout (failover.Timing.SilenceSlack less) asks the
// shard's other replicas (their Status RPC) how long it has been for them,
// and failover.SilentMajority decides whether to call an election (a
// TimeoutNow to itself, as in failover.go) and when: before any
// follower's own timer fires, so that the two do not split the vote.

// watchSilence checks the leader's silence and calls an election when a
// majority has not heard from it for a heartbeat timeout.
func (n *Node) watchSilence() {
	defer n.wg.Done()
	if n.peerStat == nil {
		return
	}
	tick := time.NewTicker(n.timing.SilenceCheckEvery)
	defer tick.Stop()
	var lastAsked time.Time
	for {
		select {
		case <-n.stop:
			return
		case <-tick.C:
		}
		v, now := n.view(), time.Now()
		if !failover.AskAboutSilence(v, now, n.raft.LastContact(), lastAsked, n.heartbeat, n.timing) {
			continue
		}
		lastAsked = now
		term := n.raft.CurrentTerm()
		turn, elect := failover.SilentMajority(v, n.askPeers(v), n.heartbeat, n.timing)
		if !elect {
			continue
		}
		if !n.electInTurn(turn, lastAsked, term, v.Leader,
			"a majority has not heard from the leader for a heartbeat timeout: calling an election now") {
			return
		}
	}
}

// askPeers asks the shard's other replicas, not the leader, what they know
// of it; a replica that does not answer in time is left out.
func (n *Node) askPeers(v failover.View) []failover.Report {
	var reports []failover.Report
	for _, r := range v.Replicas {
		if r == v.Self || r == v.Leader {
			continue
		}
		st, err := n.peerStat(r, wire.StatusRequest{}, n.timing.ProbeTimeout)
		if err != nil {
			continue
		}
		for _, s := range st.Shards {
			if s.Shard == n.shard {
				reports = append(reports, failover.Report{Replica: r, IsLeader: s.State == raft.Leader.String(), IsCandidate: s.State == raft.Candidate.String(),
					Leader: s.Leader, SinceContact: s.SinceContact, Log: failover.LogPosition{Term: s.LastLogTerm, Index: s.LastIndex}})
			}
		}
	}
	return reports
}
