package kvs_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/clustertest"
	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/kvs/memlimit"
	"github.com/batchkv/batchkv/wire"
)

// TestMaxMemoryRefusesWritesAndServesReads: a server at its least
// MaxMemory (its stores may hold 128 MiB) takes 64 KiB values until its
// stores reach their share; then a write is refused with ErrNoMemory (and
// over RESP with Redis's OOM error) and changes nothing, while every key
// written reads back and deletes go on; once deletes have given memory
// back, writes are taken again. The same holds for a memory-only server
// and for a shard that is a Raft group.
func TestMaxMemoryRefusesWritesAndServesReads(t *testing.T) {
	if testing.Short() {
		t.Skip("fills the stores' 96 MiB")
	}
	for _, tc := range []struct {
		name string
		cfg  kvs.Config
		ccfg client.Config
	}{
		{"memory-only", kvs.Config{}, client.Config{}},
		{"raft group", kvs.Config{InMemory: true}, client.Config{Shards: 1, RF: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.MaxMemory = memlimit.Min
			_, addr := startServer(t, tc.cfg)
			tc.ccfg.Servers = []string{addr}
			cl, err := client.New(tc.ccfg)
			require.NoError(t, err)
			defer cl.Close()
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()

			stores, _ := memlimit.Shares(memlimit.Min)
			value := func(i int) string { return fmt.Sprintf("%08d", i) + strings.Repeat("v", 64<<10-100) }
			written := 0
			var refused error
			for i := range 4 * int(stores>>16) { // twice what fits, at least
				if refused = cl.Put(ctx, fmt.Sprint(i), value(i)); refused != nil {
					break
				}
				written++
			}
			require.ErrorIs(t, refused, client.ErrNoMemory)
			t.Logf("%d values of 64 KiB taken before the first refusal (stores' share %d MiB)", written, stores>>20)
			require.Greater(t, written, int(stores>>16)*3/4, "refused long before the share was used")
			st, err := client.Admin{}.Status(addr, wire.StatusRequest{}, 5*time.Second)
			require.NoError(t, err)
			require.LessOrEqual(t, st.Node.StoreBytes, stores+1<<20, "the stores went past their share")
			require.Equal(t, stores, st.Node.StoreLimit)

			// The refused key is absent; every written one reads back.
			_, err = cl.Get(ctx, fmt.Sprint(written))
			require.ErrorIs(t, err, client.ErrNotFound)
			for _, i := range []int{0, written / 2, written - 1} {
				v, err := cl.Get(ctx, fmt.Sprint(i))
				require.NoError(t, err)
				require.Equal(t, value(i), v)
			}
			// An explicit batch: its get is served, its put refused.
			res, err := cl.Do(ctx, []wire.Op{{Code: wire.OpGet, Key: "0"}, {Code: wire.OpPut, Key: "new", Value: value(-1)}})
			require.NoError(t, err)
			require.Equal(t, wire.StatusOK, res[0].Status)
			require.Equal(t, wire.StatusNoMemory, res[1].Status)

			// Redis clients get Redis's OOM error.
			rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
			defer rdb.Close()
			err = rdb.Set(ctx, "new", value(-1), 0).Err()
			require.Error(t, err)
			require.True(t, strings.HasPrefix(err.Error(), "OOM "), "RESP error %q", err)
			got, err := rdb.Get(ctx, "0").Result()
			require.NoError(t, err)
			require.Equal(t, value(0), got)

			// Deletes are served and give memory back; writes go on.
			for i := range written / 2 {
				require.NoError(t, cl.Delete(ctx, fmt.Sprint(i)))
			}
			require.Eventually(t, func() bool { return cl.Put(ctx, "new", value(-1)) == nil },
				10*time.Second, 50*time.Millisecond, "writes refused after deletes")
			v, err := cl.Get(ctx, "new")
			require.NoError(t, err)
			require.Equal(t, value(-1), v)
		})
	}
}

// TestMemoryMetrics: /metrics reports the server's memory bounds and what
// its stores hold.
func TestMemoryMetrics(t *testing.T) {
	srv, addr := startServer(t, kvs.Config{MaxMemory: 1 << 30})
	cl, err := client.New(client.Config{Servers: []string{addr}})
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, cl.Put(t.Context(), "k", strings.Repeat("v", 1000)))

	h := httptest.NewServer(promhttp.HandlerFor(srv.Metrics(), promhttp.HandlerOpts{}))
	defer h.Close()
	resp, err := http.Get(h.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	stores, heap := memlimit.Shares(1 << 30)
	for _, want := range []string{
		"batchkv_memory_max_bytes 1.073741824e+09",
		fmt.Sprintf("batchkv_store_limit_bytes %g", float64(stores)),
		fmt.Sprintf("batchkv_reply_budget_bytes %g", float64(heap/4)), // a quarter of the heap's share, under the default 64 MiB
		"batchkv_store_bytes ",
		"batchkv_go_memory_limit_bytes ",
	} {
		require.Contains(t, string(body), want)
	}
	require.NotContains(t, string(body), "batchkv_store_bytes 0\n", "the store's bytes are counted")
}

// TestMaxMemoryConfig: MaxMemory under the least, or negative, is refused
// (the shares are memlimit's, tested there).
func TestMaxMemoryConfig(t *testing.T) {
	_, err := kvs.New(kvs.Config{MaxMemory: memlimit.Min - 1})
	require.ErrorContains(t, err, "at least 256 MiB")
	_, err = kvs.New(kvs.Config{MaxMemory: -1})
	require.Error(t, err)
}

// gauge returns srv's unlabelled gauge name.
func gauge(t *testing.T, srv *kvs.Server, name string) float64 {
	t.Helper()
	fams, err := srv.Metrics().Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

// TestRaftLogCacheWithinItsShare: at RF=3 with the least MaxMemory, the
// replicas' Raft log caches hold at most their share of it (a quarter of
// the heap's) on every server, while 1,024 entries of the batches written
// would hold several times that.
func TestRaftLogCacheWithinItsShare(t *testing.T) {
	c := newReplCluster(t, 3, 3, 2, clustertest.WithConfig(func(_ int, cfg *kvs.Config) { cfg.MaxMemory = memlimit.Min }))
	cl := c.Client(t)
	const batches, ops, size = 200, 64, 4096
	value := strings.Repeat("v", size)
	for b := range batches {
		batch := make([]wire.Op, ops)
		for i := range batch {
			batch[i] = wire.Op{Code: wire.OpPut, Key: fmt.Sprintf("k%d-%d", b, i), Value: value}
		}
		res, err := cl.Do(t.Context(), batch)
		require.NoError(t, err)
		require.Equal(t, wire.StatusOK, res[0].Status)
	}
	limit := float64(memlimit.LogCacheShare(memlimit.Min))
	// Half as much again as the share (what the stores' share at the
	// least MaxMemory leaves room for): the caches would hold it all.
	require.Greater(t, float64(batches*ops*size), 1.5*limit, "the test writes too little to pass the share")
	for i := range 3 {
		srv := c.Server(i)
		require.Equal(t, limit, gauge(t, srv, "batchkv_raft_log_cache_limit_bytes"))
		held := gauge(t, srv, "batchkv_raft_log_cache_bytes")
		require.Positive(t, held, "server %d caches no entry", i)
		require.LessOrEqual(t, held, limit, "server %d", i)
	}
}
