package kvs

import (
	"time"

	"github.com/batchkv/batchkv/kvs/backend"
)

// SetStaleReadsForTest plants a bug for the linearizability checker to
// catch: every replica serves gets from its own memory, leader or not,
// with no read barrier.
func SetStaleReadsForTest(s *Server, on bool) {
	s.svc.backend.(*backend.Replicated).Planted.StaleReads.Store(on)
}

// ReplyBytesHeld returns the bytes of reply values the server holds
// charged, waiting to be written.
func ReplyBytesHeld(s *Server) int64 { return s.replies.Held() }

// PlantLeaseForTest plants a bug for the linearizability checker to
// catch: lease reads with a lease of d, not checked for safety.
func PlantLeaseForTest(cfg *Config, d time.Duration) {
	cfg.ReadMode, cfg.plantLease = ReadLease, d
}

// SetServeByMapForTest plants a bug for the linearizability checker to
// catch: a replica that its server's map names the shard's preferred one
// serves the shard's read-only batches from its own store, leader or not
// (ownership by the map rather than by Raft leadership).
func SetServeByMapForTest(s *Server, on bool) {
	s.svc.backend.(*backend.Replicated).Planted.ServeByMap.Store(on)
}

// SetCASOnLeaderForTest plants a bug for the linearizability checker to
// catch: a leader decides each conditional put on its own store before
// the batch goes into the log (planted.DecideBeforeLog), instead of
// leaving the decision to the state machine.
func SetCASOnLeaderForTest(s *Server, on bool) {
	s.svc.backend.(*backend.Replicated).Planted.CASOnLeader.Store(on)
}

// CallsTracked returns how many requests' calls the server holds for the
// Service to find by their arguments (Server.calls).
func CallsTracked(s *Server) int {
	n := 0
	s.calls.Range(func(_, _ any) bool { n++; return true })
	return n
}

// SetReapEveryMaxForTest makes the reaper of a server made with cfg wait
// up to d between looks while the server is within its reply budget, in
// place of a second: a test of the wake when the budget goes over.
func SetReapEveryMaxForTest(cfg *Config, d time.Duration) { cfg.reapEveryMax = d }

// SetStoreLimitForTest bounds the stores of a server made with cfg to n
// bytes, as -max-memory bounds them to a share of it, for tests that fill
// a limit smaller than any -max-memory gives.
func SetStoreLimitForTest(cfg *Config, n int64) { cfg.storeLimit = n }

// SetIgnorePeerStoresForTest plants a bug for the follower's memory test
// to catch: leaders take puts while a peer replicating the shard says
// its stores are near their limit.
func SetIgnorePeerStoresForTest(s *Server, on bool) {
	s.svc.backend.(*backend.Replicated).Planted.IgnorePeerStores.Store(on)
}
