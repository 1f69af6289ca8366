package replica

import (
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/kvs/replica/diskspace"
	"github.com/batchkv/batchkv/kvs/replica/failover"
	"github.com/batchkv/batchkv/wire"
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

// isFull reports whether replica r of this shard (this one or a peer) has
// a full data dir, as far as this server knows.
func (g *Group) isFull(r string) bool {
	if r == g.self {
		return g.disk.IsFull()
	}
	return g.disk.PeerIsFull(r)
}

// noSpace reports whether a majority of the shard's replicas have full
// data dirs: the shard then takes no writes.
func (g *Group) noSpace() bool {
	if !g.disk.AnyFull() {
		return false
	}
	place := g.Placement()
	full := 0
	for _, r := range place {
		if g.isFull(r) {
			full++
		}
	}
	return full > len(place)/2
}

// mayStand reports whether this replica may stand for election: not
// while its disk is full, unless a majority's is (the shard then only
// serves reads, which any replica can lead).
func (g *Group) mayStand() bool { return !g.disk.IsFull() || g.noSpace() }

// refuseWrite returns why this replica, as leader, must not append a
// write now: ErrNoSpace when a majority of the shard's disks are full,
// ErrHandingOver when its own is (watchDisk is handing its leadership to
// a replica that can write). Nil otherwise.
func (g *Group) refuseWrite() error {
	if !g.disk.AnyFull() || g.raft.State() != raft.Leader {
		return nil
	}
	if g.noSpace() {
		return ErrNoSpace
	}
	if g.disk.IsFull() {
		return ErrHandingOver
	}
	return nil
}

// watchDisk hands this replica's leadership to a replica that can write
// while its own data dir is full.
func (g *Group) watchDisk() {
	defer g.wg.Done()
	if g.disk == nil {
		return
	}
	tick := time.NewTicker(diskspace.Every)
	defer tick.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-tick.C:
		}
		if !g.disk.IsFull() || g.raft.State() != raft.Leader || g.noSpace() {
			continue
		}
		to := g.writableReplica()
		if to == "" {
			continue
		}
		g.log.Warn("data dir full: handing leadership to a replica that can write", "to", to, "dir", g.disk.Dir())
		g.lease.giveUp()
		if err := g.raft.LeadershipTransferToServer(raft.ServerID(to), raft.ServerAddress(to)).Error(); err != nil {
			g.log.Info("leadership transfer failed", "to", to, "err", err)
		}
		g.lease.resume()
	}
}

// writableReplica returns a peer whose disk is not full and that answered
// within the heartbeat timeout, the preferred first; "" if none.
func (g *Group) writableReplica() string {
	now := time.Now()
	for _, r := range g.Placement() {
		if r == g.self || g.disk.PeerIsFull(r) {
			continue
		}
		if at, ok := g.stream.heardFrom(r); ok && now.Sub(at) <= g.heartbeat {
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
func (f *fullPreferred) hold(g *Group, hb *failover.HandBack, preferred string, now time.Time) bool {
	if g.isFull(preferred) && !plantedHandBackToFull.Load() {
		if !f.was {
			g.log.Info("not handing leadership back while the preferred replica's disk is full", "to", preferred)
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
func (t *preVoteGuard) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if t.mayStand != nil && !t.mayStand() {
		return errFullNoStand
	}
	return t.NetworkTransport.RequestVote(id, target, args, resp)
}

// RequestPreVote fails a pre-vote request of a replica that may not
// stand.
func (t *preVoteGuard) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if t.mayStand != nil && !t.mayStand() {
		return errFullNoStand
	}
	return t.NetworkTransport.RequestPreVote(id, target, args, resp)
}

// peers returns the other servers of the cluster under this server's map.
func (s *Set) peers() []string {
	var out []string
	for _, a := range s.Map().Servers {
		if a != s.cfg.Self {
			out = append(out, a)
		}
	}
	return out
}

// Disk returns the space of the data dir; nil when the replicas are in
// memory.
func (s *Set) Disk() *wire.DiskStats { return s.disk.Stats() }
