package replica

import (
	"errors"
	"net"
	"sync"
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
// refuses nothing; silence.go handles it.

// watchedConn is an inbound Raft connection that reports when it ends.
type watchedConn struct {
	net.Conn
	once  sync.Once
	ended func()
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.once.Do(c.ended)
	}
	return n, err
}

// suspectLeader asks watchLeaderDeath to check the leader.
func (g *Group) suspectLeader() {
	select {
	case g.suspect <- struct{}{}:
	default:
	}
}

// view returns this replica's view of its shard for the failover
// decisions.
func (g *Group) view() failover.View {
	leader, _ := g.raft.LeaderWithID()
	return failover.View{Self: g.self, Replicas: g.Placement(), Leader: string(leader),
		Follower: g.raft.State() == raft.Follower,
		Log:      failover.LogPosition{Index: g.raft.LastIndex(), Term: statUint(g.raft.Stats(), "last_log_term")}}
}

// watchLeaderDeath checks the leader each time an inbound connection
// ends, and calls an election when it is dead.
func (g *Group) watchLeaderDeath() {
	defer g.wg.Done()
	for {
		select {
		case <-g.stop:
			return
		case <-g.suspect:
		}
		since, term := time.Now(), g.raft.CurrentTerm()
		v := g.view()
		turn, elect := failover.CrashedLeader(v, g.probeAll(v), g.timing)
		if !elect {
			continue
		}
		if g.lease.on {
			// A refused port does not prove the leader dead, and its lease
			// may hold: the silence check replaces it (lease.go).
			g.log.Info("leader's port refuses connections; with lease reads, waiting for the silence check", "leader", v.Leader)
			continue
		}
		if g.peerStat != nil && failover.PeerAhead(v, g.askPeers(v)) {
			g.log.Info("leader's port refuses connections; a peer's log is ahead, leaving the election to it", "leader", v.Leader)
			if !g.nudgeInTurn(v, since, term) {
				return
			}
			continue
		}
		wait := failover.CrashWait(turn, time.Since(since), g.heartbeat)
		if !g.electInTurn(wait, since, term, v.Leader, "leader's port refuses connections: calling an election now") {
			return
		}
	}
}

// probeAll probes the leader of v and, only if it is gone, the other
// replicas.
func (g *Group) probeAll(v failover.View) map[string]failover.Probe {
	if !v.Follower || v.Leader == "" {
		return nil
	}
	probes := map[string]failover.Probe{v.Leader: g.probe(v.Leader)}
	if probes[v.Leader] != failover.Gone {
		return probes
	}
	for _, r := range v.Replicas {
		if r != v.Self && r != v.Leader {
			probes[r] = g.probe(r)
		}
	}
	return probes
}

// electInTurn waits wait, then calls an election if failover.StillElect
// says so, given the term when the decision was taken. It returns false
// when the replica closes.
func (g *Group) electInTurn(wait time.Duration, since time.Time, term uint64, old, why string) bool {
	if !g.sleep(wait) {
		return false
	}
	if failover.StillElect(g.now(), failover.Decision{At: since, Term: term, Leader: old}) {
		g.log.Warn(why, "leader", old)
		g.timeoutNow(g.self)
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
func (g *Group) nudgeInTurn(v failover.View, since time.Time, term uint64) bool {
	if !g.sleep(failover.NudgeWait(v, time.Since(since), g.heartbeat, g.timing)) {
		return false
	}
	gaveUp := failover.Decision{At: since, Term: term, Leader: v.Leader}
	if !failover.StillElect(g.now(), gaveUp) {
		return true
	}
	cur := g.view()
	cur.Leader = v.Leader // the one given up on, even if forgotten since
	elapsed := time.Since(since)
	peer, ok := failover.NudgeTarget(cur, g.askPeers(cur), elapsed, g.heartbeat, g.timing)
	if ok && failover.StillElect(g.now(), gaveUp) {
		g.log.Warn("the peer whose log is ahead has called no election: asking it to call one now", "peer", peer, "leader", v.Leader)
		g.timeoutNow(peer)
	}
	return true
}

// sleep waits d, and returns false if the replica closes meanwhile.
func (g *Group) sleep(d time.Duration) bool {
	select {
	case <-g.stop:
		return false
	case <-time.After(d):
		return true
	}
}

// now returns what this replica knows at this moment, for
// failover.StillElect.
func (g *Group) now() failover.Now {
	leader, _ := g.raft.LeaderWithID()
	n := failover.Now{Follower: g.raft.State() == raft.Follower, LastContact: g.raft.LastContact(),
		Leader: string(leader), Term: g.raft.CurrentTerm()}
	if v, ok := g.lastVote(); ok && v.Term == n.Term && v.For != g.self {
		n.VotedFor = v.For
	}
	n.Asked = g.asked.get()
	return n
}

// notesVoteRequest notes, for a heartbeat timeout, the term of a vote
// request from a candidate whose log is at least as up to date as this
// replica's (one Raft will grant unless it has voted in that term
// already), as the transport passes it to Raft: the failover paths must
// see an election as soon as it reaches the replica, not once Raft, busy
// storing entries, has read the request and raised its term.
func (g *Group) notesVoteRequest(req *raft.RequestVoteRequest) {
	if !(failover.LogPosition{Index: req.LastLogIndex, Term: req.LastLogTerm}).Behind(g.lastEntry()) {
		g.asked.note(req.Term, g.heartbeat)
	}
}

// timeoutNow makes the replica at addr, this one or a peer, a candidate
// now, with the vote requests of a leadership transfer, which voters grant
// although their own timeouts have not run out: it sends that replica's
// Raft node a TimeoutNow.
func (g *Group) timeoutNow(addr string) {
	var resp raft.TimeoutNowResponse
	req := raft.TimeoutNowRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax,
		ID: []byte(g.self), Addr: []byte(g.self)}}
	if err := g.transport.TimeoutNow(raft.ServerID(addr), raft.ServerAddress(addr), &req, &resp); err != nil {
		g.log.Warn("could not call the election", "replica", addr, "err", err)
	}
}

// probe dials addr and tells whether a server is there.
func (g *Group) probe(addr string) failover.Probe {
	c, err := g.dial(addr, g.timing.ProbeTimeout)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return failover.Gone
		}
		return failover.Unknown
	}
	defer func() { _ = c.Close() }()
	_ = c.SetReadDeadline(time.Now().Add(g.timing.ProbeHold))
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
