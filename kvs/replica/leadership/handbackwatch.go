package leadership

import (
	"time"

	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/kvs/replica/failover"
)

// watchHandBack feeds the leader's heartbeat observations to a
// failover.HandBack and hands leadership back to the shard's preferred
// replica when it says so, so that leaders stay spread over the servers
// after a failover.
func (n *Node) watchHandBack() {
	defer n.wg.Done()
	tick := time.NewTicker(n.timing.HandBackEvery)
	defer tick.Stop()
	preferred := n.placement()[0]
	hb := failover.NewHandBack(n.self, preferred, n.timing)
	var full fullPreferred
	for {
		select {
		case <-n.stop:
			return
		case o := <-n.observed:
			switch d := o.Data.(type) {
			case raft.FailedHeartbeatObservation:
				hb.HeartbeatFailed(string(d.PeerID))
			case raft.ResumedHeartbeatObservation:
				hb.HeartbeatResumed(string(d.PeerID), time.Now())
			}
		case now := <-tick.C:
			if p := n.placement()[0]; p != preferred {
				// A move changed the preferred replica: start afresh.
				preferred = p
				hb = failover.NewHandBack(n.self, preferred, n.timing)
				full = fullPreferred{}
			}
			if full.hold(n, hb, preferred, now) {
				continue
			}
			if !hb.Tick(now, n.raft.State() == raft.Leader) {
				continue
			}
			// A replica whose answers are lost (a one-way partition)
			// fails a heartbeat only when its RPC times out; it is silent
			// on the wire well before that.
			if at, ok := n.heardFrom(preferred); !ok || now.Sub(at) > n.heartbeat {
				n.log.Info("not handing leadership back: the preferred replica has not answered lately", "to", preferred)
				continue
			}
			n.log.Info("handing leadership to the preferred replica", "to", preferred)
			if n.isFull(preferred) {
				handBacksToFull.Add(1)
			}
			// The preferred replica will be elected at once: no lease read
			// may be served from here on.
			n.lease.GiveUp()
			if err := n.raft.LeadershipTransferToServer(raft.ServerID(preferred), raft.ServerAddress(preferred)).Error(); err != nil {
				n.log.Info("leadership transfer failed", "to", preferred, "err", err)
			}
			n.lease.Resume()
		}
	}
}
