package wire

import "time"

// The admin RPCs, KVService.Layout and KVService.Status, are served over
// net/rpc's HTTP transport with gob (client.Discover and kvsctl use them);
// the binary codec carries only BatchOp.

// LayoutMethod and StatusMethod are the net/rpc names of the admin RPCs.
const (
	LayoutMethod = "KVService.Layout"
	StatusMethod = "KVService.Status"
)

// LayoutRequest is the argument of KVService.Layout.
type LayoutRequest struct{}

// Layout describes how a cluster places keys, so that a client given one
// server's address can route like the servers do.
type Layout struct {
	// Servers are every server's address, as clients reach them.
	Servers []string
	// VirtualNodes per node on the ring (0: the default).
	VirtualNodes int
	// Replicas is the replication factor; 0 means the cluster is not
	// replicated: keys map to servers directly, with no shards.
	Replicas int
	// Shards is the number of shards of a replicated cluster.
	Shards int
}

// StatusRequest is the argument of KVService.Status.
type StatusRequest struct {
	// Digest asks for each shard's content digest, which reads the whole
	// shard: for checks after a run, not for polling under load.
	Digest bool
}

// StatusReply is a server's view of the shards it replicates.
type StatusReply struct {
	Self   string
	Layout Layout
	Shards []ShardStatus
	// Node is the server's counters and resource use at the moment it
	// answered; two replies a second apart give its rates (kvsctl top).
	// Nil from servers older than this field.
	Node *NodeStats
}

// NodeStats is a server's cumulative counters and its process's resource
// use at one instant.
type NodeStats struct {
	At      time.Time // when the server read them
	Started time.Time // when the server started
	Gets    uint64    // get ops answered
	Writes  uint64    // put and delete ops applied
	Errors  uint64    // ops answered with a status other than OK, not found or not leader
	// Redirects counts ops answered "not leader": sent to a replica that
	// does not lead their shard, which the client then sends on.
	Redirects uint64
	BadConn   uint64        // connections refused or closed for bad input or a cap
	BytesIn   uint64        // bytes read from every connection (clients and Raft)
	BytesOut  uint64        // bytes written to every connection
	CPU       time.Duration // user + system CPU time of the process so far
	RSS       int64         // resident memory now, in bytes
	Conns     int           // connections open now
}

// ShardStatus is one replica's view of its shard.
type ShardStatus struct {
	Shard     int
	Replicas  []string // preferred leader first
	State     string   // Leader, Follower, Candidate or Shutdown
	Leader    string   // "" while unknown
	Term      uint64
	LastIndex uint64 // last entry in this replica's log
	// LastLogTerm is the term of that entry: with LastIndex, how up to
	// date the log is, as Raft's votes compare logs.
	LastLogTerm uint64
	Commit      uint64 // last entry known committed
	Applied     uint64 // last entry applied to the store
	Snapshot    uint64 // index of the last snapshot
	Keys        int
	// SinceContact is how long ago this replica last heard from its
	// leader (zero on a leader).
	SinceContact time.Duration
	// Restores counts the snapshots this replica's state machine loaded
	// since it started: at start from its own disk, or sent by a leader.
	Restores uint64
	// Digest is an order-independent hash of the shard's pairs, set when
	// asked for. Replicas that applied the same entries agree on it; it is
	// meaningful when Applied is the same on each and does not move.
	Digest uint64
}
