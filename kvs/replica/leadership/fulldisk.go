package leadership

import (
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/kvs/replica/diskspace"
	"github.com/batchkv/batchkv/kvs/replica/failover"
)

// What a shard's replica does about full disks (package diskspace explains
// the states): it refuses writes its shard cannot store, stands for no
// election while full, and hands a leadership it holds to a replica that
// can write.

// plantedHandBackToFull is the bug SetHandBackToFullForTest plants: the
// leaders hand leadership back to a preferred replica whose disk is full.
var plantedHandBackToFull atomic.Bool

// SetHandBackToFullForTest plants (on) or removes a bug for the full-disk
// tests' own test: leaders hand leadership back to their preferred
// replica even while its disk is full, as they did before full disks
// were handled. Nothing but tests may call it.
func SetHandBackToFullForTest(on bool) { plantedHandBackToFull.Store(on) }

// handBacksToFull counts the hand-backs of leadership to a preferred
// replica that the leader knew full: none, unless the bug is planted.
var handBacksToFull atomic.Int64

// HandBacksToFull returns how many times, in this process, a leader has
// handed leadership back to a preferred replica it knew was full.
func HandBacksToFull() int64 { return handBacksToFull.Load() }

// isFull reports whether replica r of this shard (this one or a peer) has
// a full data dir, as far as this server knows.
func (n *Node) isFull(r string) bool {
	if r == n.self {
		return n.disk.IsFull()
	}
	return n.disk.PeerIsFull(r)
}

// NoSpace reports whether a majority of the shard's replicas have full
// data dirs: the shard then takes no writes.
func (n *Node) NoSpace() bool {
	if !n.disk.AnyFull() {
		return false
	}
	place := n.placement()
	full := 0
	for _, r := range place {
		if n.isFull(r) {
			full++
		}
	}
	return full > len(place)/2
}

// mayStand reports whether this replica may stand for election: not
// while its disk is full, unless a majority's is (the shard then only
// serves reads, which any replica can lead).
func (n *Node) mayStand() bool { return !n.disk.IsFull() || n.NoSpace() }

// watchDisk hands this replica's leadership to a replica that can write
// while its own data dir is full.
func (n *Node) watchDisk() {
	defer n.wg.Done()
	if n.disk == nil {
		return
	}
	tick := time.NewTicker(diskspace.Every)
	defer tick.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-tick.C:
		}
		if !n.disk.IsFull() || n.raft.State() != raft.Leader || n.NoSpace() {
			continue
		}
		to := n.writableReplica()
		if to == "" {
			continue
		}
		n.log.Warn("data dir full: handing leadership to a replica that can write", "to", to, "dir", n.disk.Dir())
		n.lease.GiveUp()
		if err := n.raft.LeadershipTransferToServer(raft.ServerID(to), raft.ServerAddress(to)).Error(); err != nil {
			n.log.Info("leadership transfer failed", "to", to, "err", err)
		}
		n.lease.Resume()
	}
}

// writableReplica returns a peer whose disk is not full and that answered
// within the heartbeat timeout, the preferred first; "" if none.
func (n *Node) writableReplica() string {
	now := time.Now()
	for _, r := range n.placement() {
		if r == n.self || n.disk.PeerIsFull(r) {
			continue
		}
		if at, ok := n.heardFrom(r); ok && now.Sub(at) <= n.heartbeat {
			return r
		}
	}
	return ""
}

// fullPreferred keeps a leader from handing leadership back to its
// shard's preferred replica while that replica's disk is full, and for
// Timing.HandBackHealthyFor after, while it catches up: to the hand-back
// decision, a full replica fails its heartbeats.
type fullPreferred struct{ was bool }

// hold reports, at now, whether the preferred replica is full, and tells
// hb when it stops being so.
func (f *fullPreferred) hold(n *Node, hb *failover.HandBack, preferred string, now time.Time) bool {
	if n.isFull(preferred) && !plantedHandBackToFull.Load() {
		if !f.was {
			n.log.Info("not handing leadership back while the preferred replica's disk is full", "to", preferred)
		}
		f.was = true
		hb.HeartbeatFailed(preferred)
		return true
	}
	if f.was {
		f.was = false
		hb.HeartbeatResumed(preferred, now)
	}
	return false
}

// RequestVote fails a vote request of a replica that may not stand.
func (t *Guard) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if t.mayStand != nil && !t.mayStand() {
		return errFullNoStand
	}
	return t.Network.RequestVote(id, target, args, resp)
}

// RequestPreVote fails a pre-vote request of a replica that may not
// stand.
func (t *Guard) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if t.mayStand != nil && !t.mayStand() {
		return errFullNoStand
	}
	return t.Network.RequestPreVote(id, target, args, resp)
}
