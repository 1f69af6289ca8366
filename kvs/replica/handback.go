package replica

import (
	"time"

	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/kvs/replica/failover"
)

// watchHandBack feeds the leader's heartbeat observations to a
// failover.HandBack and hands leadership back to the shard's preferred
// replica when it says so, so that leaders stay spread over the servers
// after a failover.
func (g *Group) watchHandBack() {
	defer g.wg.Done()
	tick := time.NewTicker(g.timing.HandBackEvery)
	defer tick.Stop()
	preferred := g.Placement()[0]
	hb := failover.NewHandBack(g.self, preferred, g.timing)
	var full fullPreferred
	for {
		select {
		case <-g.stop:
			return
		case o := <-g.observed:
			switch d := o.Data.(type) {
			case raft.FailedHeartbeatObservation:
				hb.HeartbeatFailed(string(d.PeerID))
			case raft.ResumedHeartbeatObservation:
				hb.HeartbeatResumed(string(d.PeerID), time.Now())
			}
		case now := <-tick.C:
			if p := g.Placement()[0]; p != preferred {
				// A move changed the preferred replica: start afresh.
				preferred = p
				hb = failover.NewHandBack(g.self, preferred, g.timing)
				full = fullPreferred{}
			}
			if full.hold(g, hb, preferred, now) {
				continue
			}
			if !hb.Tick(now, g.raft.State() == raft.Leader) {
				continue
			}
			// A replica whose answers are lost (a one-way partition)
			// fails a heartbeat only when its RPC times out; it is silent
			// on the wire well before that.
			if at, ok := g.stream.heardFrom(preferred); !ok || now.Sub(at) > g.heartbeat {
				g.log.Info("not handing leadership back: the preferred replica has not answered lately", "to", preferred)
				continue
			}
			g.log.Info("handing leadership to the preferred replica", "to", preferred)
			// The preferred replica will be elected at once: no lease read
			// may be served from here on.
			g.lease.giveUp()
			if err := g.raft.LeadershipTransferToServer(raft.ServerID(preferred), raft.ServerAddress(preferred)).Error(); err != nil {
				g.log.Info("leadership transfer failed", "to", preferred, "err", err)
			}
			g.lease.resume()
		}
	}
}
