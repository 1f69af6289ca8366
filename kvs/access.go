package kvs

import (
	"fmt"
	"time"

	"github.com/batchkv/batchkv/auth"
)

// Who may do what. Every RPC is open to anyone who reaches the port
// without TLS, and with TLS to any certificate of the cluster's CA; two
// kinds of request are narrower (serverCodec checks them once a request's
// body is read), and only node certificates may speak Raft, for the
// shards whose replicas' hosts they name (handleRaft).

// mayChangeMembership says whether the caller on st may send membership
// ops that change replicas, groups or the map: with TLS, an admin or a
// node certificate; without TLS, anyone who reaches the port (as for
// every other RPC).
func (s *Server) mayChangeMembership(st *connState) error {
	if s.serverTLS != nil && st.role != auth.RoleAdmin && st.role != auth.RoleNode {
		return fmt.Errorf("%w (certificate role %q)", errMembershipRefused, st.role)
	}
	return nil
}

// mayDigest says whether the caller on st may have content digests, a
// full scan of every shard: with TLS only a node certificate; without, at
// most one caller per Limits.DigestEvery.
func (s *Server) mayDigest(st *connState) error {
	if s.serverTLS != nil {
		if st.role != auth.RoleNode {
			return fmt.Errorf("%w (certificate role %q)", errDigestRefused, st.role)
		}
		return nil
	}
	now := time.Now().UnixNano()
	last := s.lastDigest.Load()
	if now-last < int64(s.limits.DigestEvery) || !s.lastDigest.CompareAndSwap(last, now) {
		return errDigestRefused
	}
	return nil
}
