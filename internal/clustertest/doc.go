// Package clustertest starts replicated batchkv clusters inside a test
// process, for the integration tests of kvs, membership and whatever else
// needs a real cluster: n servers (real TCP, real Raft, optionally mutual
// TLS) on loopback ports, each with a data dir under the test's temp dir,
// and every Raft link from one server to another through a fault proxy of
// its own (package faultnet), so a test can cut, slow or mute any
// server's links while clients talk to the servers directly.
//
// It plays the part of hashicorp/raft's MakeCluster or etcd's rafttest:
//
//	c := clustertest.New(t, 3, 3, 6)        // 3 servers, RF=3, 6 shards
//	l := c.WaitLeader(0, -1)                // some server leads shard 0
//	c.Stop(l)                               // as if its process died
//	cl := c.Client(t)                       // a client of the cluster
//
// Hooks that only a package's own tests can reach (kvs's *ForTest
// functions live in its export_test.go) are passed in by the caller with
// WithConfig and WithServerHook. The cluster stops its servers and
// proxies when the test ends.
package clustertest
