package kvs_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/clustertest"
	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/wire"
)

// replCluster is a clustertest.Cluster with the methods that only
// kvs's tests can have (they reach the servers' test-only switches or
// internals).
type replCluster struct {
	*clustertest.Cluster
	t *testing.T
}

// newReplCluster starts clustertest.New(t, n, rf, shards, opts...).
func newReplCluster(t *testing.T, n, rf, shards int, opts ...clustertest.Option) *replCluster {
	t.Helper()
	return &replCluster{Cluster: clustertest.New(t, n, rf, shards, opts...), t: t}
}

// plantStaleReads plants the stale-read bug in every server when on
// (kvs.SetStaleReadsForTest).
func plantStaleReads(on bool) clustertest.Option {
	return clustertest.WithServerHook(func(_ int, s *kvs.Server) { kvs.SetStaleReadsForTest(s, on) })
}

// plantServeByMap plants kvs.SetServeByMapForTest in every server when on.
func plantServeByMap(on bool) clustertest.Option {
	return clustertest.WithServerHook(func(_ int, s *kvs.Server) { kvs.SetServeByMapForTest(s, on) })
}

// plantCASOnLeader plants kvs.SetCASOnLeaderForTest in every server when
// on.
func plantCASOnLeader(on bool) clustertest.Option {
	return clustertest.WithServerHook(func(_ int, s *kvs.Server) { kvs.SetCASOnLeaderForTest(s, on) })
}

// plantLease plants a lease of length d, unchecked, in every server
// (kvs.PlantLeaseForTest).
func plantLease(d time.Duration) clustertest.Option {
	return clustertest.WithConfig(func(_ int, cfg *kvs.Config) { kvs.PlantLeaseForTest(cfg, d) })
}

// inBatches calls f with ops on keys prefix0..prefix{n-1}, 500 at a time,
// made by op, and the index of the first.
func inBatches(prefix string, n int, op func(key string, i int) wire.Op, f func(start int, ops []wire.Op)) {
	for start := 0; start < n; start += 500 {
		ops := make([]wire.Op, 0, 500)
		for i := start; i < min(n, start+500); i++ {
			ops = append(ops, op(fmt.Sprintf("%s%d", prefix, i), i))
		}
		f(start, ops)
	}
}

// putAll writes n keys prefix0..prefix{n-1} in batches and fails the test
// on any error.
func putAll(t *testing.T, cl *client.Client, prefix string, n int, value func(i int) string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	put := func(key string, i int) wire.Op { return wire.Op{Code: wire.OpPut, Key: key, Value: value(i)} }
	inBatches(prefix, n, put, func(_ int, ops []wire.Op) {
		res, err := cl.Do(ctx, ops)
		require.NoError(t, err)
		for _, r := range res {
			require.Equal(t, wire.StatusOK, r.Status)
		}
	})
}

// checkAll reads the keys putAll wrote and compares them.
func checkAll(t *testing.T, cl *client.Client, prefix string, n int, value func(i int) string) {
	t.Helper()
	getAll(t, cl, prefix, n, func(i int, key string, r wire.Result) {
		require.Equal(t, wire.StatusOK, r.Status, "key %s", key)
		require.Equal(t, value(i), r.Value, "key %s", key)
	})
}

// getAll reads keys prefix0..prefix{n-1} in batches and calls check with
// each key's index, the key and its result; it fails the test if a batch
// fails.
func getAll(t *testing.T, cl *client.Client, prefix string, n int, check func(i int, key string, r wire.Result)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	get := func(key string, _ int) wire.Op { return wire.Op{Code: wire.OpGet, Key: key} }
	inBatches(prefix, n, get, func(start int, ops []wire.Op) {
		res, err := cl.Do(ctx, ops)
		require.NoError(t, err)
		for j, r := range res {
			check(start+j, ops[j].Key, r)
		}
	})
}

func valueOf(tag string) func(int) string {
	return func(i int) string { return fmt.Sprintf("%s-%d-%s", tag, i, strings.Repeat("x", i%50)) }
}
