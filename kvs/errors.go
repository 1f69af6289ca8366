package kvs

import (
	"errors"

	"github.com/batchkv/batchkv/wire"
)

// The errors of package kvs. A Config that New refuses gets one of the
// first ones (wrapped with the value at fault) or a message of its own;
// a request that a caller may not make gets errMembershipRefused or
// errDigestRefused, which its client sees as the RPC's error.
var (
	// errNotInPeers: Config.Self is not one of Config.Peers.
	errNotInPeers = errors.New("kvs: Self is not among Peers")
	// errNegativeTimeout: a timeout of the Config below zero.
	errNegativeTimeout = errors.New("kvs: negative timeout")
	// errMembershipRefused: the caller may not change the cluster's
	// membership (its certificate is neither an admin's nor a node's).
	errMembershipRefused = errors.New("kvs: " + wire.MembershipRefused)
	// errDigestRefused: the caller may not ask for content digests now.
	errDigestRefused = errors.New("kvs: content digests are for node certificates, or at most once per Limits.DigestEvery without TLS")
)
