// Package replica replicates a server's shards: each shard it hosts is a
// hashicorp/raft group whose state machine is a store.Store plus a session
// table that makes retried batches apply once.
//
// The server opens a Set at start, hands it the Raft connections that
// arrive on its port (Accept; they open with transport.Preamble), and serves each
// batch on the shard's Group:
//
//	set, err := replica.Open(replica.Config{Layout: l, Self: addr, DataDir: dir})
//	g := set.Group(shard) // nil: not hosted here
//	// a batch that writes: g.Write(wire.AppendBatchArgs(nil, &batch), timeout),
//	// then its other reads from g.Store()
//	// a batch that only reads: after ReadBarrier, from g.Store()
//	set.Close()
//
// A write is acknowledged once its entry is committed (on stable storage
// of a majority) and applied. A read is served only after an entry
// appended after it began (its batch's write entry, or a barrier) has
// been committed and applied by this replica as leader, so no read is
// stale.
//
// Failover is Raft's, sped up by two watchers (package leadership) whose
// decisions live in package failover: a follower whose leader's port
// refuses connections calls an election at once, and one whose leader has
// gone silent asks its peers and calls one as soon as a majority agrees.
// A leader hands leadership back to the shard's preferred replica once it
// is healthy, so leaders stay spread.
//
// The subpackages: raftstore keeps each replica's Raft log, vote and
// snapshots; fsm is a shard's state machine; transport carries its Raft
// traffic over the server's port; leadership runs the watchers, the vote
// guard and the read lease; diskspace watches the data dir's free space;
// commitgate groups a leader's entries; selfcheck compares a server's
// replicas with their peers at start; mapfile keeps the shard map in the
// data dir. This package wires them together around each shard's Raft
// node (group.go), and manages the replicas a server hosts and the shard
// map (set.go, meta.go).
package replica
