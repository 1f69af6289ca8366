// Package failover holds the decisions a shard's replica takes to replace
// a failed leader sooner than Raft's election timers would, as pure
// functions over what the replica observed and the time. The replica
// (package replica) gathers the observations, by dialling peers and asking
// for their status, and carries out the decisions; this package does no
// I/O and reads no clock, so each decision is tested from a table.
//
// A follower's loop, on each suspicion (an inbound Raft connection ended,
// or a tick found its leader silent for a heartbeat timeout):
//
//  1. Gather: probe the leader's port and the other replicas
//     (CrashedLeader), or ask the others how long they have not heard from
//     the leader (SilentMajority).
//  2. Decide: call an election only if a majority, this replica included,
//     agrees the leader is gone; the answer also says how long to wait for
//     this replica's turn, so that followers do not split the vote.
//  3. Wait that long, then check StillElect: a follower that has meanwhile
//     heard from a leader, learnt of a new one, or seen its term move (a
//     replica ahead of it called an election), stands down.
//
// A follower whose log is behind a peer's leaves the election to that
// peer (PeerAhead), which would refuse it its vote. After a crash, if the
// peer has called none by the time its turn is over (NudgeWait), the
// follower asks it to (NudgeTarget).
//
// Safety never depends on these decisions: votes still need a majority
// and an up-to-date log. Only who starts an election, and when, changes.
//
// HandBack is the leader's side: when to give leadership back to a
// shard's preferred replica once it is healthy again, so that leaders
// stay spread over the servers.
package failover

import (
	"iter"
	"slices"
	"time"
)

// Timing holds the delays of the failover decisions. DefaultTiming gives
// the values the servers run with.
type Timing struct {
	// Stagger is how long a follower waits per eligible replica ahead of it
	// in the shard's order before calling an election. Default 300 ms.
	Stagger time.Duration
	// ProbeTimeout bounds each dial of a peer's port, and each status
	// request. Default 200 ms.
	ProbeTimeout time.Duration
	// ProbeHold is how long a probe's connection must stay open for the
	// peer to count as alive: a proxy in front of a dead server accepts
	// and then closes at once. Default 100 ms.
	ProbeHold time.Duration
	// SilenceCheckEvery is how often a follower looks at its leader's
	// silence. Default 100 ms.
	SilenceCheckEvery time.Duration
	// SilenceAskEvery is how often a follower whose leader stays silent
	// asks its peers again: a peer that heard the leader a little later
	// than this follower reaches the heartbeat timeout a little later too.
	// Default 250 ms.
	SilenceAskEvery time.Duration
	// SilenceSlack is how much sooner than a heartbeat timeout silence
	// counts: a follower asks its peers once it has not heard its leader
	// for a heartbeat timeout less this, and counts the peers silent for
	// as long. Acting before Raft's own election timers can fire (never
	// sooner than a heartbeat timeout) keeps the two from racing and
	// splitting the vote. Default 160 ms, two heartbeat intervals of the
	// default timing: a live leader's heartbeats arrive every 80 ms or so,
	// however slow the link, so 640 ms of silence at a majority is no
	// live leader.
	SilenceSlack time.Duration
	// HandBackEvery is how often a leader considers handing leadership to
	// the preferred replica. Default 2 s.
	HandBackEvery time.Duration
	// HandBackAfterLead is how long a replica must have led before it
	// hands leadership back. Default 1 s.
	HandBackAfterLead time.Duration
	// HandBackHealthyFor is how long the preferred replica must have
	// answered heartbeats again, after failing them, before it is handed
	// leadership. Default 5 s.
	HandBackHealthyFor time.Duration
}

// DefaultTiming returns the timing the servers run with.
func DefaultTiming() Timing {
	return Timing{
		Stagger:            300 * time.Millisecond,
		ProbeTimeout:       200 * time.Millisecond,
		ProbeHold:          100 * time.Millisecond,
		SilenceCheckEvery:  100 * time.Millisecond,
		SilenceAskEvery:    250 * time.Millisecond,
		SilenceSlack:       160 * time.Millisecond,
		HandBackEvery:      2 * time.Second,
		HandBackAfterLead:  time.Second,
		HandBackHealthyFor: 5 * time.Second,
	}
}

// WithDefaults returns t with every zero field set to its default.
func (t Timing) WithDefaults() Timing {
	d := DefaultTiming()
	for _, f := range []struct{ v, def *time.Duration }{
		{&t.Stagger, &d.Stagger}, {&t.ProbeTimeout, &d.ProbeTimeout}, {&t.ProbeHold, &d.ProbeHold},
		{&t.SilenceCheckEvery, &d.SilenceCheckEvery}, {&t.SilenceAskEvery, &d.SilenceAskEvery}, {&t.SilenceSlack, &d.SilenceSlack}, {&t.HandBackEvery, &d.HandBackEvery},
		{&t.HandBackAfterLead, &d.HandBackAfterLead}, {&t.HandBackHealthyFor, &d.HandBackHealthyFor},
	} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	return t
}

// View is a follower's view of its shard when it considers an election.
type View struct {
	// Self is this replica's address; Replicas are the shard's, in its
	// order (the preferred leader first). Earlier replicas elect first.
	Self     string
	Replicas []string
	// Leader is the leader this replica follows; "" when it knows none.
	Leader string
	// Follower says whether this replica is a follower now.
	Follower bool
	// Log is how up to date this replica's log is.
	Log LogPosition
}

// LogPosition is the last entry of a replica's log: its term and index.
type LogPosition struct {
	Term, Index uint64
}

// Behind reports whether a log ending at p is less up to date than one
// ending at q, as Raft's votes compare them: a candidate whose log is
// behind a voter's does not get its vote.
func (p LogPosition) Behind(q LogPosition) bool {
	return p.Term < q.Term || (p.Term == q.Term && p.Index < q.Index)
}

// ahead reports whether replica r comes before v.Self in the shard's order.
func (v View) ahead(r string) bool {
	return slices.Index(v.Replicas, r) < slices.Index(v.Replicas, v.Self)
}

// peers yields the reports of the shard's replicas other than v.Self and
// v.Leader, only the first of each replica's.
func (v View) peers(reports []Report) iter.Seq[Report] {
	return func(yield func(Report) bool) {
		seen := map[string]bool{v.Self: true, v.Leader: true}
		for _, r := range reports {
			if seen[r.Replica] {
				continue
			}
			seen[r.Replica] = true
			if !yield(r) {
				return
			}
		}
	}
}

// majority reports whether n replicas are a majority of the shard.
func (v View) majority(n int) bool { return n > len(v.Replicas)/2 }
