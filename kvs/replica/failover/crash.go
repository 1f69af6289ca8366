package failover

import "time"

// Probe is what a dial of a peer's port found.
type Probe int

const (
	// Unknown: no answer in time (a slow or cut-off peer looks like this).
	Unknown Probe = iota
	// Alive: the port accepted a connection and kept it open.
	Alive
	// Gone: the port refused, or accepted and closed at once.
	Gone
)

// CrashedLeader decides whether a follower should call an election now
// because its leader crashed: the leader's port is Gone, and this replica
// still reaches a majority of the shard (itself and the Alive peers). It
// returns how long to wait for this replica's turn: Stagger per reachable
// replica ahead of it. A follower that is itself cut off reaches no
// majority and does nothing, so it cannot raise its term and disrupt the
// shard when it returns.
func CrashedLeader(v View, probes map[string]Probe, t Timing) (wait time.Duration, elect bool) {
	if !v.Follower || v.Leader == "" || probes[v.Leader] != Gone {
		return 0, false
	}
	reachable, ahead := 1, 0
	for _, r := range v.Replicas {
		if r == v.Self || r == v.Leader || probes[r] != Alive {
			continue
		}
		reachable++
		if v.ahead(r) {
			ahead++
		}
	}
	if !v.majority(reachable) {
		return 0, false
	}
	return time.Duration(ahead) * t.Stagger, true
}

// PeerAhead reports whether a peer that answered (not the old leader)
// has a log more up to date than this replica's: then this replica leaves
// the election to it, since that peer would refuse its vote, and a
// candidate that cannot win only raises terms while the shard has no
// leader (a chaos run lost 2.5 s so).
func PeerAhead(v View, reports []Report) bool {
	for r := range v.peers(reports) {
		if v.Log.Behind(r.Log) {
			return true
		}
	}
	return false
}

// NudgeWait is how long, from now, a follower that suspected a crash
// elapsed ago and left the election to a peer whose log is ahead
// (PeerAhead) waits before it asks that peer to call the election
// (NudgeTarget): the longest wait a peer can have (CrashWait with the
// last turn of the shard's order) and a ProbeHold more for the peer's own
// probes. A peer that noticed the crash has called its election by then,
// and its vote request has moved this follower's term, so StillElect
// calls the nudge off. It also waits until the peers can have been
// silent as long as NudgeTarget asks, with SilenceSlack to spare. The
// nudge must come before the peer's own heartbeat timer can fire (a
// heartbeat timeout after its last contact): that makes it a candidate,
// which a nudge no longer helps.
func NudgeWait(v View, elapsed, heartbeatTimeout time.Duration, t Timing) time.Duration {
	lastTurn := time.Duration(max(len(v.Replicas)-2, 0)) * t.Stagger
	return max(CrashWait(lastTurn, elapsed, heartbeatTimeout)+t.ProbeHold,
		minSilence(heartbeatTimeout)+t.SilenceSlack-elapsed)
}

// minSilence is the least silence NudgeTarget takes as a peer's agreement
// that the leader is gone: two of a live leader's longest gaps between
// heartbeats, which it sends each follower every tenth to fifth of a
// heartbeat timeout.
func minSilence(heartbeatTimeout time.Duration) time.Duration { return 2 * heartbeatTimeout / 5 }

// NudgeTarget picks the peer that a follower which stood aside for it
// (PeerAhead), and has waited NudgeWait since its suspicion elapsed ago,
// should ask to call the election. v.Leader is the leader it gave up on.
//
// A peer is silent when it has not heard from that leader for elapsed
// less Timing.SilenceSlack, and for minSilence at least. There is a
// target only when a majority of the shard, this follower included, is
// silent, and then it is the most up to date of the silent peers whose
// logs are ahead of this follower's and that are followers: a candidate
// would drop the nudge when its own election round ends. There is none
// when a peer leads, or follows a leader other than v's: the shard has a
// leader again.
//
// The peer may have missed the crash: in a chaos run a leader cut off link
// by link left one follower's probe of it answered, and the shard waited
// for heartbeat timeouts (2.47 s against a bound of 2.5 s).
func NudgeTarget(v View, reports []Report, elapsed, heartbeatTimeout time.Duration, t Timing) (string, bool) {
	if !v.Follower || v.Leader == "" {
		return "", false
	}
	silentFor := max(elapsed-t.SilenceSlack, minSilence(heartbeatTimeout))
	silent := 1
	var target string
	var best LogPosition
	for r := range v.peers(reports) {
		if r.followsOther(v.Leader) {
			return "", false
		}
		if r.SinceContact < silentFor {
			continue
		}
		silent++
		if r.IsCandidate || !v.Log.Behind(r.Log) {
			continue
		}
		if target == "" || best.Behind(r.Log) {
			target, best = r.Replica, r.Log
		}
	}
	if !v.majority(silent) {
		return "", false
	}
	return target, target != ""
}

// CrashWait is how long a follower that suspected a crash elapsed ago
// still waits before it may call the election: its turn, and at least two
// heartbeat intervals (a fifth of the heartbeat timeout) from the
// suspicion, so that a live leader, or a new one, is heard from first.
func CrashWait(turn, elapsed, heartbeatTimeout time.Duration) time.Duration {
	return max(turn, heartbeatTimeout/5-elapsed)
}

// Decision is what a follower knew when it decided to call an election.
type Decision struct {
	// At is when it suspected the leader; Term its Raft term then.
	At   time.Time
	Term uint64
	// Leader is the leader it gave up on.
	Leader string
}

// Now is what a follower knows once it has waited its turn.
type Now struct {
	Follower    bool
	LastContact time.Time // of any leader
	Leader      string    // the leader it knows now; "" for none
	Term        uint64
	// VotedFor is the candidate it has voted for in Term, other than
	// itself; "" for none. In a term with a leader, usually that leader.
	VotedFor string
	// Asked is the term of an election a peer has just asked it to vote
	// in, with a log Raft will accept, whether or not Raft has read the
	// request yet; 0 for none.
	Asked uint64
}

// StillElect says whether a follower that took decision d, and has waited
// its turn, should call the election now: it is still a follower, has not
// heard from a leader since, knows of no leader other than the old one,
// and its term has not moved (a replica ahead of it that called an
// election first raised it with its vote request; calling another would
// split the vote, and a vote request that has reached it but not yet
// Raft counts too), and it has voted for no candidate in its term but the
// old leader. A vote for another means an election is under way whose
// winner has not been heard from yet: Raft keeps the old leader as the
// one it knows until then, so a decision can be taken after the vote, in
// the same term, and calling an election then would depose the winner as
// it takes office.
func StillElect(n Now, d Decision) bool {
	if !n.Follower || n.LastContact.After(d.At) || n.Term != d.Term || n.Asked > d.Term ||
		(n.VotedFor != "" && n.VotedFor != d.Leader) {
		return false
	}
	return n.Leader == "" || n.Leader == d.Leader
}
