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
// when their heartbeat timeout runs out (0.8-2.4 s), and with pre-vote an
// election succeeds only once a majority has noticed. But a crashed
// process leaves a trace at once: the kernel closes its connections and
// its port refuses new ones. So when an inbound Raft connection of a
// shard ends, its follower dials the leader; if the dial is refused and
// the follower can still reach a majority with its other peers, the
// leader is gone, and the follower calls an election at once, as a
// leadership transfer would (raft's TimeoutNow, which voters grant
// although they have not timed out yet). Followers wait their turn (300 ms
// per reachable replica ahead of them in the shard's order), so they do
// not split the vote.
//
// A leader that is paused, or cut off by a network that drops packets,
// refuses nothing, and the timeouts apply as before. (A proxy in front
// of a dead server accepts the dial and closes it at once; that counts as
// refused too.) A follower that is
// itself cut off cannot reach a majority and does nothing, so it cannot
// inflate its term and disrupt the shard when it returns.

// failoverStagger is how long each follower waits per reachable replica
// ahead of it before calling the election.
const failoverStagger = 300 * time.Millisecond

// probeTimeout bounds each dial of the liveness check.
const probeTimeout = 200 * time.Millisecond

// electingTransport is raft's network transport with one addition: the
// replica can hand its own Raft node a TimeoutNow request.
type electingTransport struct {
	*raft.NetworkTransport
	rpcs chan raft.RPC
	stop chan struct{}
}

func newElectingTransport(t *raft.NetworkTransport, stop chan struct{}) *electingTransport {
	e := &electingTransport{NetworkTransport: t, rpcs: make(chan raft.RPC), stop: stop}
	go func() {
		for {
			select {
			case rpc := <-t.Consumer():
				select {
				case e.rpcs <- rpc:
				case <-stop:
					return
				}
			case <-stop:
				return
			}
		}
	}()
	return e
}

// Consumer implements raft.Transport.
func (e *electingTransport) Consumer() <-chan raft.RPC { return e.rpcs }

// timeoutNow makes the local Raft node start an election now.
func (e *electingTransport) timeoutNow(self string) {
	req := &raft.TimeoutNowRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax,
		ID: []byte(self), Addr: []byte(self)}}
	select {
	case e.rpcs <- raft.RPC{Command: req, RespChan: make(chan raft.RPCResponse, 1)}:
	case <-e.stop:
	}
}

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
		wait, ok := g.leaderDead()
		if !ok {
			continue
		}
		dead, _ := g.raft.LeaderWithID()
		select {
		case <-g.stop:
			return
		case <-time.After(wait):
		}
		if l, _ := g.raft.LeaderWithID(); g.raft.State() != raft.Follower || (l != "" && l != dead) {
			continue // someone else took over meanwhile
		}
		g.log.Warn("leader's port refuses connections: calling an election now", "leader", string(dead))
		g.elect.timeoutNow(g.self)
	}
}

// leaderDead says whether this follower's leader refuses connections
// while a majority of the replicas can still be reached, and if so how
// long this follower waits for its turn.
func (g *replicaGroup) leaderDead() (time.Duration, bool) {
	leader, _ := g.raft.LeaderWithID()
	if g.raft.State() != raft.Follower || leader == "" {
		return 0, false
	}
	if g.probe(string(leader)) != peerGone {
		return 0, false
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
		return 0, false
	}
	return time.Duration(ahead) * failoverStagger, true
}

// peerState is what a probe learned of a peer.
type peerState int

const (
	peerUnknown peerState = iota // no answer in time
	peerAlive                    // accepted a connection and kept it open
	peerGone                     // refused, or accepted and closed at once
)

// probeHold is how long a probe's connection must stay open for the peer
// to count as alive. A proxy in front of a dead server (toxiproxy in the
// fault experiments) accepts and then closes the connection when it
// cannot reach the server; a live server waits for the protocol preamble.
const probeHold = 100 * time.Millisecond

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
