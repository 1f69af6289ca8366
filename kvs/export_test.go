package kvs

// SetStaleReadsForTest plants a bug for the linearizability checker to
// catch: every replica serves gets from its own memory, leader or not,
// with no read barrier.
func SetStaleReadsForTest(s *Server, on bool) {
	s.svc.backend.(*replicatedBackend).staleReads.Store(on)
}
