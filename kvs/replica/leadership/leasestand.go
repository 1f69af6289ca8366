package leadership

import (
	"errors"
	"time"

	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/internal/bugswitch"
)

// Standing in haste, with lease reads on. A leader's lease (lease.go)
// rests on this: no replica helps elect another leader until it has not
// heard from this one for the silence threshold (a heartbeat timeout less
// SilenceSlack). Raft's own elections keep to it: a follower stands only
// once its heartbeat timeout has passed, and refuses candidates while it
// knows a leader. A TimeoutNow skips both: the replica sent one stands at
// once, and voters grant its vote requests, which carry the
// leadership-transfer flag, at once. A leader sends one when it hands
// over, and gives up its lease first (Lease.GiveUp). The silence check
// (silentleader.go) sends one to its own replica, having found a majority
// silent a moment before; in that moment the replica may hear from the
// leader again, acknowledge an entry that renews the leader's lease, and
// then stand, and win: a new leader within the old one's lease, which
// then serves a stale read. A leader that stalls long enough to look
// silent on a loaded machine opens that window.
//
// So with lease reads on, a replica that is not the leader refuses a
// TimeoutNow from anyone but the leader it knows while it has heard from
// a leader within the silence threshold. That closes it: a new leader's
// log holds every entry a majority acknowledged (Raft's vote compares
// logs, and any two majorities share a replica), so it had received the
// old leader's last entry, at or after the lease began, before it stood;
// it stood at least the threshold later, past the lease's end. When the
// leader is really gone, as the silence check found, the threshold has
// passed already and nothing changes.

// errLeaderHeard refuses a TimeoutNow that the rule above forbids.
var errLeaderHeard = errors.New("leadership: refused to stand: a leader was heard within the silence threshold, and lease reads are on")

// leaderHeardWithin returns how long this replica must still wait before
// it may stand at a TimeoutNow that its leader did not send: the rest of
// the silence threshold since it last heard from a leader, by Raft's
// account or, later, when the guard last passed on a leader's request
// that Raft may still be handling. Zero with
// lease reads off, or the rule planted off (bugswitch.HastyElections),
// and on the leader.
func (n *Node) leaderHeardWithin() time.Duration {
	if !n.lease.On() || bugswitch.HastyElections.Load() || n.raft.State() == raft.Leader {
		return 0
	}
	last := n.raft.LastContact()
	if sent := n.transport.lastLeaderRequest(); sent.After(last) {
		last = sent // passed on, maybe not handled yet
	}
	if last.IsZero() {
		return 0
	}
	return n.heartbeat - n.timing.SilenceSlack - time.Since(last)
}

// refuseHaste refuses a TimeoutNow that the rule forbids: one from
// anyone but the leader this replica knows, while it still hears from a
// leader.
func (n *Node) refuseHaste(req *raft.TimeoutNowRequest) error {
	if addr, id := n.raft.LeaderWithID(); addr != "" && (string(req.Addr) == string(addr) || string(req.ID) == string(id)) {
		return nil
	}
	if n.leaderHeardWithin() > 0 {
		n.log.Info("refused a TimeoutNow: a leader was heard within the silence threshold, and lease reads are on",
			"from", string(req.Addr))
		return errLeaderHeard
	}
	return nil
}
