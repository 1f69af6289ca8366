package wire

import (
	"fmt"
	"time"
)

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

// ClusterMap describes how a cluster places keys, so that a client given
// one server's address can route like the servers do: the reply of
// KVService.Layout, and the form in which a replicated cluster's shard map
// (shard.Map) is stored (the meta group's entries, map.json) and sent.
type ClusterMap struct {
	// Servers are every server's address, as clients reach them.
	Servers []string
	// VirtualNodes per node on the ring (0: the default).
	VirtualNodes int
	// Replicas is the replication factor (RF everywhere else: the field
	// keeps its old name because gob matches fields by name, so servers
	// and clients of different versions still read it); 0 means the
	// cluster is not replicated: keys map to servers directly, with no
	// shards.
	Replicas int
	// Shards is the number of shards of a replicated cluster.
	Shards int
	// Epoch is the version of a replicated cluster's shard map; every
	// change of placement raises it. Zero from a cluster that is not
	// replicated.
	Epoch uint64
	// Placement[s] are shard s's replicas, its preferred leader first;
	// Meta are the replicas of the group that stores the map.
	Placement [][]string
	Meta      []string
}

// StatusRequest is the argument of KVService.Status.
type StatusRequest struct {
	// Digest asks for each shard's content digest, which reads the whole
	// shard: for checks after a run, not for polling under load.
	Digest bool
	// DiskOnly asks for the server's Disk and Stores alone (no shards, no
	// counters): the leaders' cheap poll of their peers' room.
	DiskOnly bool
}

// StatusReply is a server's view of the shards it replicates.
type StatusReply struct {
	Self   string
	Layout ClusterMap
	Shards []ShardStatus
	// Node is the server's counters and resource use at the moment it
	// answered; two replies a second apart give its rates (kvsctl top).
	// Nil from servers older than this field.
	Node *NodeStats
	// Disk is the space of the server's data dir; nil from a server that
	// keeps its replicas in memory, or is older than this field.
	Disk *DiskStats
	// Stores is what the server's stores hold against their share of
	// -max-memory; nil from a server that does not replicate, has no
	// -max-memory, or is older than this field.
	Stores *StoreStats
}

// StoreStats is what a server's stores hold against their share of its
// memory, at one instant.
type StoreStats struct {
	Bytes uint64 // the stores' records and tables
	Limit uint64 // their share of -max-memory; 0: none
}

// NearLimit reports whether stores at st are within a sixteenth of their
// limit, or past it: leaders take no puts for a shard one of whose
// replicas' stores are (backend.StoreLimit). False for a nil st and for
// no limit.
func (st *StoreStats) NearLimit() bool {
	return st != nil && st.Limit > 0 && st.Bytes > st.Limit-st.Limit/16
}

// WellWithinLimit reports whether stores at st hold less than seven
// eighths of their limit: a replica said near is no longer so once it
// says this (true for a nil st and for no limit).
func (st *StoreStats) WellWithinLimit() bool {
	return st == nil || st.Limit == 0 || st.Bytes < st.Limit-st.Limit/8
}

// DiskStats is the space of a server's data dir at one instant.
type DiskStats struct {
	Dir   string
	Free  uint64 // bytes free to the server's user
	Total uint64 // bytes of the file system
	// Full says the server takes no more log entries: its free space fell
	// below Reserve, and has not yet risen back above twice that.
	Full    bool
	Reserve uint64
}

// NodeStats is a server's cumulative counters and its process's resource
// use at one instant.
type NodeStats struct {
	At      time.Time // when the server read them
	Started time.Time // when the server started
	Gets    uint64    // get ops answered
	Writes  uint64    // put and delete ops applied
	Errors  uint64    // ops answered with a status other than OK, not found or not leader
	// Redirects counts ops answered "not leader" or "moved": sent to a
	// replica that does not lead their shard, or to a server that does
	// not hold it, which the client then sends on.
	Redirects uint64
	BadConn   uint64        // connections refused or closed for bad input or a cap
	BytesIn   uint64        // bytes read from every connection (clients and Raft)
	BytesOut  uint64        // bytes written to every connection
	CPU       time.Duration // user + system CPU time of the process so far
	RSS       int64         // resident memory now, in bytes
	Conns     int           // connections open now
	// StoreBytes is what the server's stores hold now, in bytes, and
	// StoreLimit the most they may (a share of MaxMemory; 0: no bound).
	StoreBytes, StoreLimit int64
	MaxMemory              int64 // the server's -max-memory in bytes; 0: no bound
	// Buffered is what the heap's bounded parts hold now, in bytes: the
	// values of unwritten replies, the requests not yet answered, and the
	// replicas' Raft log caches (each a share of MaxMemory).
	Buffered int64
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
	// Applied is the last entry Raft handed to the state machine, which
	// may not have applied it yet: a replica catching up runs behind it.
	Applied  uint64
	Snapshot uint64 // index of the last snapshot
	Keys     int
	// SinceContact is how long ago this replica last heard from its
	// leader (zero on a leader).
	SinceContact time.Duration
	// Restores counts the snapshots this replica's state machine loaded
	// since it started: at start from its own disk, or sent by a leader.
	Restores uint64
	// GateEntries counts the entries this replica appended as leader
	// through its commit gate since it started, GateHeld those of them
	// the gate held for a window (0 with the gate off).
	GateEntries, GateHeld uint64
	// Digest is an order-independent hash of the shard's pairs, set when
	// asked for, with Keys taken in the same scan. StoreIndex is then the
	// last command entry the store held during the scan. Replicas that
	// applied the same entries agree on Digest; it is comparable between
	// replicas with the same StoreIndex, and meaningless when
	// ContentMoving says applies changed the store during every scan.
	Digest        uint64
	StoreIndex    uint64
	ContentMoving bool
}

// MembershipMethod is the net/rpc name of the admin RPC that changes
// where shards live (package membership drives it).
const MembershipMethod = "KVService.Membership"

// MembershipOp is one step of a shard move.
type MembershipOp uint8

// The steps of a move. AddLearner, Promote, RemoveMember and
// TransferLeader are Raft configuration changes made at the shard's
// leader; OpenReplica and CloseReplica start and stop a replica on the
// server called; Members reads a replica's view; CommitMap stores a new
// map in the meta group (at its leader), ReadMap reads it there, and
// PublishMap gives one to a server.
const (
	Members MembershipOp = iota + 1
	OpenReplica
	AddLearner
	Promote
	TransferLeader
	RemoveMember
	CloseReplica
	CommitMap
	PublishMap
	ReadMap
)

// MembershipRefused is in the error a server answers a membership op
// that changes something when the caller's certificate may not.
const MembershipRefused = "membership changes are for admin and node certificates"

// Changes reports whether op changes a server's replicas, a group or the
// map (every op but Members and ReadMap, which only read): with TLS, only
// admin and node certificates may send those.
func (op MembershipOp) Changes() bool { return op != Members && op != ReadMap }

// String names the op for progress lines and errors.
func (op MembershipOp) String() string {
	switch op {
	case Members:
		return "members"
	case OpenReplica:
		return "open-replica"
	case AddLearner:
		return "add-learner"
	case Promote:
		return "promote"
	case TransferLeader:
		return "transfer-leader"
	case RemoveMember:
		return "remove-member"
	case CloseReplica:
		return "close-replica"
	case CommitMap:
		return "commit-map"
	case PublishMap:
		return "publish-map"
	case ReadMap:
		return "read-map"
	}
	return fmt.Sprintf("membership-op(%d)", uint8(op))
}

// MetaShard is the shard number of the meta group in membership requests
// and Raft connections: one past the last data shard, so MetaShard(S) for
// a cluster of S shards.
func MetaShard(shards int) int { return shards }

// MembershipRequest is the argument of KVService.Membership.
type MembershipRequest struct {
	Op    MembershipOp
	Shard int    // a data shard, or MetaShard for the meta group
	Addr  string // the replica the op adds, promotes, removes or hands leadership to
	// Peers are the shard's replicas, for OpenReplica: whom the new
	// replica may accept Raft connections from.
	Peers []string
	// Map is the map to commit or publish, or for CloseReplica the map
	// that no longer places the replica there (the server adopts it
	// first if it is newer than its own); Expect is the epoch the meta
	// group must hold for CommitMap to succeed (compare and set).
	Map    ClusterMap
	Expect uint64
}

// Member is one server in a shard's Raft configuration.
type Member struct {
	Addr  string
	Voter bool
}

// MembershipReply is what a membership op found.
type MembershipReply struct {
	// NotLeader says the server called does not lead the shard (or the
	// meta group); Leader names the leader it knows, if any.
	NotLeader bool
	Leader    string
	// State is the Raft state of the replica called (Leader, Follower,
	// ...), or "" if it has none.
	State string
	// Members is the replica's Raft configuration, and Applied and
	// Commit its log position, after the op.
	Members []Member
	Applied uint64
	Commit  uint64
	// Map is the meta group's map after CommitMap, or the server's map.
	Map ClusterMap
	// Stale says CommitMap found another epoch than the one expected:
	// the map changed since the caller read it, and Map is the current
	// one.
	Stale bool
}
