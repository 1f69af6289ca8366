// Package leadership is what a shard's replica does about leadership
// beyond hashicorp/raft's own timers: it speeds up failover when the
// leader's process dies (deadleader.go) or goes silent (silentleader.go),
// hands leadership back to the shard's preferred replica once it is
// healthy (handbackwatch.go) and away from a replica whose disk is full
// (fulldisk.go), makes a new shard's preferred replica its first leader
// (firstelection.go), and guards the votes: a pre-vote for a term this
// replica has voted in is refused, and a replica being rebuilt or on a
// full disk does not stand (voteguard.go). It also holds the leader's
// read lease (lease.go), which the watchers give up around a hand-over.
//
// The decisions themselves are package failover's pure functions; this
// package feeds them what the replica sees (its Raft node, probes of the
// peers' ports, the peers' Status RPC) and acts on them. A replica wires
// it in around its Raft node:
//
//	guard := leadership.NewGuard(netTransport)
//	n, err := leadership.New(leadership.Config{Guard: guard, ...})
//	r, err := raft.NewRaft(conf, fsm, logs, stable, snaps, guard)
//	n.Start(r)     // the guard passes RPCs on to r
//	n.Watch(first) // after bootstrap: the watchers run
//	...
//	n.Stop(); r.Shutdown(); guard.Close(); n.Wait()
package leadership
