package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/internal/planted"
	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/kvs/store"
)

// serve starts a memory-only server on st and returns its address.
func serve(t *testing.T, st store.Store) string {
	t.Helper()
	return serveConfig(t, kvs.Config{Store: st})
}

// serveConfig starts a server of cfg, logging nowhere, and returns its
// address.
func serveConfig(t *testing.T, cfg kvs.Config) string {
	t.Helper()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := kvs.New(cfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// checkedRun runs kvsclient -check for two seconds against a server on st.
func checkedRun(t *testing.T, st store.Store, html string) (string, error) {
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := run(ctx, []string{"-hosts", serve(t, st), "-check", "-check-html", html, "-secs", "2",
		"-numClients", "8", "-batchSize", "256", "-records", "2000", "-seed", "7"}, &out)
	return out.String(), err
}

// TestCheckPassesOnTheRealStore: -check on a correct server ends with
// "linearizable: N ops", N > 0, next to the usual results.
func TestCheckPassesOnTheRealStore(t *testing.T) {
	st, _ := store.New(store.DefaultKind)
	out, err := checkedRun(t, st, filepath.Join(t.TempDir(), "v.html"))
	require.NoError(t, err, out)
	require.Contains(t, out, "throughput ")
	m := regexp.MustCompile(`(?m)^linearizable: (\d+) ops`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	n, _ := strconv.Atoi(m[1])
	require.Greater(t, n, 100, "the checked goroutines did some work")
}

// TestCheckCatchesAPlantedStaleRead: against a store that serves a key's
// previous value to one get in four after a put, -check prints the
// violation with its visualization and the run fails.
func TestCheckCatchesAPlantedStaleRead(t *testing.T) {
	st, _ := store.New(store.DefaultKind)
	html := filepath.Join(t.TempDir(), "violation.html")
	out, err := checkedRun(t, planted.StaleReads(st, 3), html)
	require.Error(t, err)
	require.Contains(t, out, "NOT linearizable: ")
	require.Contains(t, out, "visualization: "+html)
	info, statErr := os.Stat(html)
	require.NoError(t, statErr)
	require.Positive(t, info.Size())
}

// TestCheckFlagsAreValidated: a check with no goroutine or no key is
// refused before anything runs.
func TestCheckFlagsAreValidated(t *testing.T) {
	_, err := parse([]string{"-check", "-check-clients", "0"})
	require.ErrorContains(t, err, "-check-clients")
	_, err = parse([]string{"-check", "-check-keys", "0"})
	require.ErrorContains(t, err, "-check-keys")
}
