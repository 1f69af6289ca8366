package kvs_test

import (
	"testing"
	"time"

	"github.com/batchkv/batchkv/internal/clustertest"
	"github.com/batchkv/batchkv/kvs"
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

// anyDigests lets a plaintext caller have content digests as often as it
// asks (at most every millisecond): a restarted server's self check asks
// its peers for one every 1.1 s, and with the default of one a second a
// test that polls digests competes with it and may not get one for long.
func anyDigests() clustertest.Option {
	return clustertest.WithConfig(func(_ int, cfg *kvs.Config) { cfg.Limits.DigestEvery = time.Millisecond })
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

// tryAgain reports whether try n of at most tries should be made again:
// it showed nothing either way (inconclusive, for why), and tries remain.
// A loaded machine can close the window a scenario needs; the last try is
// checked whatever it showed.
func tryAgain(t *testing.T, n, tries int, inconclusive bool, why string) bool {
	t.Helper()
	if inconclusive && n < tries {
		t.Logf("try %d of %d: %s; again", n, tries, why)
		return true
	}
	return false
}
