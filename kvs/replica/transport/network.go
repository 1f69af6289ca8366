package transport

import (
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// The fixed parameters of every shard's network transport.
const (
	// transportPool is how many idle connections to each peer the Raft
	// transport keeps for reuse.
	transportPool = 3
	// RPCTimeout bounds each Raft RPC (the deadline of its connection),
	// and a snapshot chunk's write.
	RPCTimeout = 10 * time.Second
	// rpcsInFlight is how many AppendEntries RPCs a leader keeps in
	// flight to each follower. An entry that finds every slot taken waits
	// for the oldest RPC's answer: with S slots on a round trip of D, the
	// slots free D/S apart, so it waits D/(2S) on average. hashicorp/raft's
	// default, 2, cost most of a round trip (chaos slow-network at +250 ms
	// each way: 53% of the baseline with 2, 62% and 70% with 16). With 16,
	// an open load's batches at +250 ms on the leader's egress took 285 ms
	// at the median in 3 runs of 3; with 64, 260-268 ms (2026-11-28). The
	// bytes in flight are the write rate times the round trip whatever S
	// is, but under a full load the slots fill on a fast link too, and
	// more of them make more, smaller RPCs: the standard RF=3 run was
	// about 3.5% slower with 64 than with 16 (docs/results.md, "Chaos
	// tally").
	rpcsInFlight = 64
)

// NewNetwork returns hashicorp/raft's network transport over s, logging
// through logger (NewRaftLogger's), with AppendEntries RPCs of at most
// MaxAppendBytes (Network).
func NewNetwork(s *Stream, logger hclog.Logger) *Network {
	return &Network{raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: s, MaxPool: transportPool, MaxRPCsInFlight: rpcsInFlight, Timeout: RPCTimeout, Logger: logger,
	})}
}
