package kvs

import (
	"errors"
	"net"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
)

// Fast failover after a crash. Followers normally notice a dead leader
// when their heartbeat timeout runs out (0.8-1.6 s after the last contact,
// checked at random times, so up to about 2.4 s), and with pre-vote an
// election succeeds only once a majority has noticed. But a crashed process
// leaves a trace at once: the kernel closes its connections and its port
// refuses new ones. So when an inbound Raft connection of a shard ends, its
// follower checks:
//
//   - the leader's port refuses a connection (or a proxy in front of it
//     accepts and closes it at once),
//   - the follower still reaches a majority with its other peers,
//   - and the leader has sent nothing since the connection ended, for two
//     heartbeat intervals.
//
// Then the follower calls an election at once, as a leadership transfer
// does: it sends its own Raft node a TimeoutNow request, which makes it a
// candidate whose vote requests are granted although the voters' timeouts
// have not run out. Followers wait their turn (300 ms per reachable replica
// ahead of them in the shard's order) so they do not split the vote; a
// follower that hears from a new leader meanwhile stands down. Only who
// starts an election, and when, changes: votes still need a majority and
// an up-to-date log, and reads still need a barrier in the leader's term.
//
// A leader that is paused, or cut off by a network that drops packets,
// refuses nothing, and the timeouts apply as before. A follower that is
// itself cut off reaches no majority and does nothing, so it cannot raise
// its term and disrupt the shard when it returns.

const (
	// failoverStagger is how long each follower waits per reachable
	// replica ahead of it before calling the election.
	failoverStagger = 300 * time.Millisecond
	// probeTimeout bounds each dial of the liveness check.
	probeTimeout = 200 * time.Millisecond
	// probeHold is how long a probe's connection must stay open for the
	// peer to count as alive. A proxy in front of a dead server (toxiproxy
	// in the fault experiments) accepts and then closes the connection
	// when it cannot reach the server; a live server waits for the
	// protocol preamble.
	probeHold = 100 * time.Millisecond
)

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
func (g *replicaGroup) suspectLeader() {
	select {
	case g.suspect <- struct{}{}:
	default:
	}
}

// watchLeaderDeath checks the leader each time an inbound connection
// ends, and calls an election when it is dead.
func (g *replicaGroup) watchLeaderDeath() {
	defer g.wg.Done()
	for {
		select {
		case <-g.stop:
			return
		case <-g.suspect:
		}
		since := time.Now()
		dead, wait, ok := g.leaderDead()
		if !ok {
			continue
		}
		// Wait our turn, and at least two heartbeat intervals from the
		// suspicion, so that a live leader (or a new one) is heard from.
		wait = max(wait, time.Until(since.Add(g.heartbeat/5)))
		if !g.electInTurn(wait, since, dead, "leader's port refuses connections: calling an election now") {
			return
		}
	}
}

// electInTurn waits wait, then calls an election unless this replica has
// meanwhile stopped following, heard from a leader since since, or learnt
// of a leader other than old. It returns false when the replica closes.
func (g *replicaGroup) electInTurn(wait time.Duration, since time.Time, old raft.ServerAddress, why string) bool {
	select {
	case <-g.stop:
		return false
	case <-time.After(wait):
	}
	if g.raft.State() != raft.Follower || g.raft.LastContact().After(since) {
		return true
	}
	if l, _ := g.raft.LeaderWithID(); l != "" && l != old {
		return true
	}
	g.log.Warn(why, "leader", string(old))
	g.callElection()
	return true
}

// callElection makes this replica a candidate now, with the vote requests
// of a leadership transfer: it sends its own Raft node a TimeoutNow over
// its own port.
func (g *replicaGroup) callElection() {
	var resp raft.TimeoutNowResponse
	req := raft.TimeoutNowRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax,
		ID: []byte(g.self), Addr: []byte(g.self)}}
	if err := g.transport.TimeoutNow(raft.ServerID(g.self), raft.ServerAddress(g.self), &req, &resp); err != nil {
		g.log.Warn("could not call the election", "err", err)
	}
}

// leaderDead returns this follower's leader if its port refuses
// connections while a majority of the replicas can still be reached, and
// how long this follower waits for its turn.
func (g *replicaGroup) leaderDead() (raft.ServerAddress, time.Duration, bool) {
	leader, _ := g.raft.LeaderWithID()
	if g.raft.State() != raft.Follower || leader == "" || g.probe(string(leader)) != peerGone {
		return "", 0, false
	}
	reachable, ahead := 1, 0 // this replica, and reachable replicas before it
	for _, r := range g.replicas {
		if r == g.self || r == string(leader) {
			continue
		}
		if g.probe(r) == peerAlive {
			reachable++
			if slices.Index(g.replicas, r) < slices.Index(g.replicas, g.self) {
				ahead++
			}
		}
	}
	if reachable <= len(g.replicas)/2 {
		return "", 0, false
	}
	return leader, time.Duration(ahead) * failoverStagger, true
}

// peerState is what a probe learned of a peer.
type peerState int

const (
	peerUnknown peerState = iota // no answer in time
	peerAlive                    // accepted a connection and kept it open
	peerGone                     // refused, or accepted and closed at once
)

// probe dials addr and tells whether a server is there.
func (g *replicaGroup) probe(addr string) peerState {
	c, err := g.dial(addr, probeTimeout)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return peerGone
		}
		return peerUnknown
	}
	defer func() { _ = c.Close() }()
	_ = c.SetReadDeadline(time.Now().Add(probeHold))
	var b [1]byte
	if _, err := c.Read(b[:]); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return peerAlive
		}
		return peerGone
	}
	return peerAlive
}
