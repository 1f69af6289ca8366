package main

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/kvs"
)

// TestAdminServesMetricsAndPprof: the admin port answers /metrics in
// Prometheus's text format, with the server's own counters and the Go and
// process collectors, and /debug/pprof.
func TestAdminServesMetricsAndPprof(t *testing.T) {
	srv, err := kvs.New(kvs.Config{})
	require.NoError(t, err)
	defer srv.Close()
	addr, stop, err := serveAdmin("127.0.0.1:0", srv.Metrics(), quietLogger())
	require.NoError(t, err)
	defer stop()

	get := func(path string) string {
		resp, err := http.Get("http://" + addr + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	m := get("/metrics")
	for _, want := range []string{`batchkv_ops_total{type="get"} 0`, "batchkv_batch_ops_bucket", "batchkv_received_bytes_total",
		"go_goroutines", "process_resident_memory_bytes"} {
		require.Contains(t, m, want)
	}
	require.Contains(t, get("/debug/pprof/"), "goroutine")
}
