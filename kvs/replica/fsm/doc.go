// Package fsm is the state machine of one replicated shard: its store and
// the session table that makes a retried batch apply once. A shard's Raft
// node applies its log to a Machine:
//
//	m := fsm.New(fsm.Config{})
//	r, err := raft.NewRaft(conf, m, logs, stable, snaps, transport)
//	f := r.Apply(wire.AppendBatchArgs(nil, &batch), timeout)
//	res := f.Response().(fsm.Result) // Duplicate, Results, Err
//	v, ok := store.Get(m.Store(), key)
//
// Raft calls Apply, Snapshot and Restore from one goroutine; reads of
// Store, Digest and Restores run concurrently with them. A snapshot
// (snapshot.go) is a stream of the session table and the pairs, written
// from a frozen view of the store so that applies go on meanwhile.
//
// Errors are returned, never kept: an entry that does not decode is
// Result.Err; a snapshot that does not read is Restore's error, and
// leaves the shard as it was.
package fsm
