package leadership

import (
	"errors"
	"net"
	"syscall"
	"time"

	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/kvs/replica/failover"
)

// Fast failover after a crash. Followers normally notice a dead leader
// when their heartbeat timeout runs out (0.8-1.6 s after the last contact,
// checked at random times, so up to about 2.4 s), and with pre-vote an
// election succeeds only once a majority has noticed. But a crashed process
// leaves a trace at once: the kernel closes its connections and its port
// refuses new ones. So when an inbound Raft connection of a shard ends, its
// follower probes the leader's port and its other peers, and
// failover.CrashedLeader decides whether to call an election and when.
//
// A follower calls an election as a leadership transfer does: it sends its
// own Raft node a TimeoutNow request, which makes it a candidate whose vote
// requests are granted although the voters' timeouts have not run out. A
// follower whose log is behind a peer's leaves the election to the peer,
// and if the peer has called none when its turn is over, sends the
// TimeoutNow to the peer's Raft node instead (nudgeInTurn).
//
// A leader that is paused, or cut off by a network that drops packets,
// refuses nothing; silentleader.go handles it.

// view returns this replica's view of its shard for the failover
// decisions.
func (n *Node) view() failover.View {
	leader, _ := n.raft.LeaderWithID()
	return failover.View{Self: n.self, Replicas: n.placement(), Leader: string(leader),
		Follower: n.raft.State() == raft.Follower,
		Log:      failover.LogPosition{Index: n.raft.LastIndex(), Term: statUint(n.raft.Stats(), "last_log_term")}}
}

// watchLeaderDeath checks the leader each time an inbound connection
// ends, and calls an election when it is dead.
func (n *Node) watchLeaderDeath() {
	defer n.wg.Done()
	for {
		select {
		case <-n.stop:
			return
		case <-n.suspect:
		}
		since, term := time.Now(), n.raft.CurrentTerm()
		v := n.view()
		turn, elect := failover.CrashedLeader(v, n.probeAll(v), n.timing)
		if !elect {
			continue
		}
		if n.lease.on {
			// A refused port does not prove the leader dead, and its lease
			// may hold: the silence check replaces it (lease.go).
			n.log.Info("leader's port refuses connections; with lease reads, waiting for the silence check", "leader", v.Leader)
			continue
		}
		if n.peerStat != nil && failover.PeerAhead(v, n.askPeers(v)) {
			n.log.Info("leader's port refuses connections; a peer's log is ahead, leaving the election to it", "leader", v.Leader)
			if !n.nudgeInTurn(v, since, term) {
				return
			}
			continue
		}
		wait := failover.CrashWait(turn, time.Since(since), n.heartbeat)
		if !n.electInTurn(wait, since, term, v.Leader, "leader's port refuses connections: calling an election now") {
			return
		}
	}
}

// probeAll probes the leader of v and, only if it is gone, the other
// replicas.
func (n *Node) probeAll(v failover.View) map[string]failover.Probe {
	if !v.Follower || v.Leader == "" {
		return nil
	}
	probes := map[string]failover.Probe{v.Leader: n.probe(v.Leader)}
	if probes[v.Leader] != failover.Gone {
		return probes
	}
	for _, r := range v.Replicas {
		if r != v.Self && r != v.Leader {
			probes[r] = n.probe(r)
		}
	}
	return probes
}

// electInTurn waits wait, then calls an election if failover.StillElect
// says so, given the term when the decision was taken. It returns false
// when the replica closes.
func (n *Node) electInTurn(wait time.Duration, since time.Time, term uint64, old, why string) bool {
	if !n.sleep(wait) {
		return false
	}
	if failover.StillElect(n.now(), failover.Decision{At: since, Term: term, Leader: old}) {
		n.log.Warn(why, "leader", old)
		n.timeoutNow(n.self)
	}
	return true
}

// nudgeInTurn is the fallback of a follower that left the election to a
// peer whose log is ahead: it waits failover.NudgeWait, and if it should
// still elect (failover.StillElect), asks the peer that
// failover.NudgeTarget picks to call the election. v is its view when it
// suspected the leader, at since, in term. It returns false when the
// replica closes.
//
// A TimeoutNow that reached a peer which had just won an election would
// depose it: StillElect is checked again just before the nudge is sent.
// With three replicas and the leader gone, the peer wins only with this
// follower's vote, which moves its term: the window is that of a vote
// request crossing the nudge.
func (n *Node) nudgeInTurn(v failover.View, since time.Time, term uint64) bool {
	if !n.sleep(failover.NudgeWait(v, time.Since(since), n.heartbeat, n.timing)) {
		return false
	}
	gaveUp := failover.Decision{At: since, Term: term, Leader: v.Leader}
	if !failover.StillElect(n.now(), gaveUp) {
		return true
	}
	cur := n.view()
	cur.Leader = v.Leader // the one given up on, even if forgotten since
	elapsed := time.Since(since)
	peer, ok := failover.NudgeTarget(cur, n.askPeers(cur), elapsed, n.heartbeat, n.timing)
	if ok && failover.StillElect(n.now(), gaveUp) {
		n.log.Warn("the peer whose log is ahead has called no election: asking it to call one now", "peer", peer, "leader", v.Leader)
		n.timeoutNow(peer)
	}
	return true
}

// sleep waits d, and returns false if the replica closes meanwhile.
func (n *Node) sleep(d time.Duration) bool {
	select {
	case <-n.stop:
		return false
	case <-time.After(d):
		return true
	}
}

// now returns what this replica knows at this moment, for
// failover.StillElect.
func (n *Node) now() failover.Now {
	leader, _ := n.raft.LeaderWithID()
	now := failover.Now{Follower: n.raft.State() == raft.Follower, LastContact: n.raft.LastContact(),
		Leader: string(leader), Term: n.raft.CurrentTerm()}
	if v, ok := n.lastVote(); ok && v.Term == now.Term && v.For != n.self {
		now.VotedFor = v.For
	}
	now.Asked = n.asked.get()
	return now
}

// notesVoteRequest notes, for a heartbeat timeout, the term of a vote
// request from a candidate whose log is at least as up to date as this
// replica's (one Raft will grant unless it has voted in that term
// already), as the transport passes it to Raft: the failover paths must
// see an election as soon as it reaches the replica, not once Raft, busy
// storing entries, has read the request and raised its term.
func (n *Node) notesVoteRequest(req *raft.RequestVoteRequest) {
	if !(failover.LogPosition{Index: req.LastLogIndex, Term: req.LastLogTerm}).Behind(n.lastEntry()) {
		n.asked.note(req.Term, n.heartbeat)
	}
}

// timeoutNow makes the replica at addr, this one or a peer, a candidate
// now, with the vote requests of a leadership transfer, which voters grant
// although their own timeouts have not run out: it sends that replica's
// Raft node a TimeoutNow.
func (n *Node) timeoutNow(addr string) {
	var resp raft.TimeoutNowResponse
	req := raft.TimeoutNowRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax,
		ID: []byte(n.self), Addr: []byte(n.self)}}
	if err := n.transport.TimeoutNow(raft.ServerID(addr), raft.ServerAddress(addr), &req, &resp); err != nil {
		n.log.Warn("could not call the election", "replica", addr, "err", err)
	}
}

// probe dials addr and tells whether a server is there.
func (n *Node) probe(addr string) failover.Probe {
	c, err := n.dial(addr, n.timing.ProbeTimeout)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return failover.Gone
		}
		return failover.Unknown
	}
	defer func() { _ = c.Close() }()
	_ = c.SetReadDeadline(time.Now().Add(n.timing.ProbeHold))
	var b [1]byte
	if _, err := c.Read(b[:]); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return failover.Alive
		}
		return failover.Gone
	}
	return failover.Alive
}
