package leadership

import (
	"time"

	"github.com/hashicorp/raft"
)

// firstElectionFor bounds how long a new shard's preferred replica tries
// to be its first leader, and firstElectionEvery is how often it tries.
const (
	firstElectionFor   = 5 * time.Second
	firstElectionEvery = 200 * time.Millisecond
)

// leadFirst makes the preferred replica of a new shard call its first
// election at once, rather than leave it to whichever replica's timer
// fires first: otherwise a third of shards start with another leader and
// hand leadership back a few seconds into the first load, a dip in every
// run's first seconds. It gives up once any leader is known.
func (n *Node) leadFirst() {
	defer n.wg.Done()
	tick := time.NewTicker(firstElectionEvery)
	defer tick.Stop()
	deadline := time.After(firstElectionFor)
	for {
		select {
		case <-n.stop:
			return
		case <-deadline:
			return
		case <-tick.C:
		}
		if leader, _ := n.raft.LeaderWithID(); leader != "" {
			return
		}
		if n.raft.State() == raft.Follower {
			n.timeoutNow(n.self)
		}
	}
}
