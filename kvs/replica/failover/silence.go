package failover

import "time"

// Report is what another replica of the shard answered about it.
type Report struct {
	// Replica is the address of the replica that answered.
	Replica string
	// IsLeader says whether it leads the shard itself; IsCandidate
	// whether it is a candidate.
	IsLeader, IsCandidate bool
	// Leader is the leader it knows; "" when none.
	Leader string
	// SinceContact is how long it has not heard from its leader.
	SinceContact time.Duration
	// Log is how up to date its log is.
	Log LogPosition
}

// followsOther reports whether the replica that answered r leads, or
// follows a leader other than leader: the shard has another leader.
func (r Report) followsOther(leader string) bool {
	return r.IsLeader || (r.Leader != "" && r.Leader != leader)
}

// AskAboutSilence says whether a follower should ask its peers about its
// leader's silence now: it follows a known leader, has not heard from it
// for a heartbeat timeout less Timing.SilenceSlack, and did not ask within
// the last Timing.SilenceAskEvery.
func AskAboutSilence(v View, now, lastContact, lastAsked time.Time, heartbeatTimeout time.Duration, t Timing) bool {
	return v.Follower && v.Leader != "" &&
		now.Sub(lastAsked) >= t.SilenceAskEvery && now.Sub(lastContact) >= heartbeatTimeout-t.SilenceSlack
}

// SilentMajority decides whether a follower whose leader has gone silent
// should call an election now: a majority, itself included, has not heard
// from that leader for a heartbeat timeout less Timing.SilenceSlack. That
// is, within two heartbeat intervals, the condition under which pre-vote
// would let an election through anyway; Raft's randomized timers reach it
// only later. Reports from the
// leader itself, and from replicas that lead or follow another leader, do
// not count. It returns how long to wait for this replica's turn: Stagger
// per replica ahead of it in the shard's order that answered and follows
// the same leader, silent yet or not: such a replica will find the same
// majority within moments, and two followers calling elections at once
// split the vote. A follower whose log is behind an answering peer's does
// not call one at all: that peer would refuse its vote, and it calls its
// own. A follower that alone hears nothing (starved of CPU, or cut off
// itself) finds no majority.
func SilentMajority(v View, reports []Report, heartbeatTimeout time.Duration, t Timing) (wait time.Duration, elect bool) {
	if !v.Follower || v.Leader == "" {
		return 0, false
	}
	silent, ahead := 1, 0
	for r := range v.peers(reports) {
		if r.followsOther(v.Leader) {
			continue
		}
		if v.Log.Behind(r.Log) {
			return 0, false
		}
		if r.SinceContact >= heartbeatTimeout-t.SilenceSlack {
			silent++
		}
		if v.ahead(r.Replica) {
			ahead++
		}
	}
	if !v.majority(silent) {
		return 0, false
	}
	return time.Duration(ahead) * t.Stagger, true
}
