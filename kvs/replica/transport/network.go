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
	// transportTimeout bounds each Raft RPC's write, and a snapshot
	// chunk's.
	transportTimeout = 10 * time.Second
	// rpcsInFlight is how many AppendEntries RPCs a leader keeps in
	// flight to each follower. hashicorp/raft's default, 2, makes entries
	// that arrive while two are in flight wait for the first's answer: on
	// a slow link, most of a round trip more (chaos slow-network at +250
	// ms each way: 53% of the baseline with 2, 62% and 70% with 16; the
	// standard run is unchanged).
	rpcsInFlight = 16
)

// NewNetwork returns hashicorp/raft's network transport over s, logging
// through logger (NewRaftLogger's).
func NewNetwork(s *Stream, logger hclog.Logger) *raft.NetworkTransport {
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: s, MaxPool: transportPool, MaxRPCsInFlight: rpcsInFlight, Timeout: transportTimeout, Logger: logger,
	})
}
