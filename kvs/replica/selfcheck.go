package replica

import (
	"github.com/batchkv/batchkv/internal/bugswitch"
	"github.com/batchkv/batchkv/kvs/replica/selfcheck"
)

// checkAgainstPeers runs the start-up check (package selfcheck) of every
// data shard replica this server opened, in the background; a replica
// that differs from its peers is rebuilt.
func (s *Set) checkAgainstPeers() {
	if s.cfg.PeerStatus == nil || bugswitch.NoStartupCheck.Load() {
		return
	}
	cfg := selfcheck.Config{Self: s.cfg.Self, PeerStatus: s.cfg.PeerStatus, Logger: s.cfg.Logger}
	for sh := range s.layout.Shards() {
		if g := s.Group(sh); g != nil && !g.Rebuilding() && len(g.Placement()) >= 3 {
			r := selfcheck.Replica{Shard: sh, Dir: g.dir, Placement: g.Placement, Applied: g.raft.AppliedIndex,
				Content: func() (uint64, int) { return g.fsm.Digest(), g.fsm.Store().Len() }, Stop: g.stop}
			go func() {
				if verdict := selfcheck.Run(cfg, r); verdict != nil {
					s.damaged(sh, g, verdict)
				}
			}()
		}
	}
}
