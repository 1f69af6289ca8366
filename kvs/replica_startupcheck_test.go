package kvs_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/internal/clustertest"
)

// TestStartupChecksCompareEveryReplica: after every server of a plaintext
// cluster of three servers and six shards restarts, each of the 18
// replicas' start-up checks compares it with its peers within 20 s. A
// peer gives a plaintext caller one digest a second, and a digest covers
// every shard: the checks of one server share a peer's reply
// (selfcheck.SharedDigests). When each replica's check asked on its own,
// none of the 18 compared within 20 s, in 2 runs of 2 (2026-11-29).
func TestStartupChecksCompareEveryReplica(t *testing.T) {
	c := newReplCluster(t, 3, 3, 6)
	clustertest.PutAll(t, c.Client(t), "k", 600, clustertest.ValueOf("v"))
	for i := range c.Addrs() {
		c.Stop(i)
	}
	logs := &clustertest.LogBuffer{}
	c.SetLogger(slog.New(slog.NewTextHandler(logs, nil)))
	start := time.Now()
	for i := range c.Addrs() {
		c.Start(i)
	}
	const agrees = "start-up check: the replica agrees with its peers"
	ok := func() bool { return logs.Count(agrees) >= 18 }
	require.Eventually(t, ok, 20*time.Second, 100*time.Millisecond, "%d of 18 replicas compared", logs.Count(agrees))
	t.Logf("%d of 18 replicas compared, %v after the restart began", logs.Count(agrees), time.Since(start).Round(100*time.Millisecond))
}
