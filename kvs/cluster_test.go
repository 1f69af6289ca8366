package kvs_test

import (
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/kvs/store"
)

// testCluster is n real servers on loopback TCP, closed when the test ends.
type testCluster struct {
	addrs   []string
	servers []*kvs.Server
}

type clusterOptions struct {
	store        string                        // store.New name; empty is store.DefaultKind
	wrap         func(store.Store) store.Store // wraps each server's store (planted bugs)
	frameTimeout time.Duration
}

func newTestCluster(t *testing.T, n int, opts clusterOptions) *testCluster {
	t.Helper()
	c := &testCluster{}
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns = append(lns, ln)
		c.addrs = append(c.addrs, ln.Addr().String())
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	for i, ln := range lns {
		cfg := kvs.Config{Self: c.addrs[i], Logger: logger, FrameTimeout: opts.frameTimeout}
		if n > 1 {
			cfg.Peers = c.addrs
		}
		name := opts.store
		if name == "" {
			name = store.DefaultKind
		}
		store, ok := store.New(name)
		require.True(t, ok, "no store %q", name)
		if opts.wrap != nil {
			store = opts.wrap(store)
		}
		cfg.Store = store
		srv, err := kvs.New(cfg)
		require.NoError(t, err)
		c.servers = append(c.servers, srv)
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { require.NoError(t, srv.Close()) })
	}
	return c
}

// client returns a client of the given servers (all of them if none).
func (c *testCluster) client(t *testing.T, servers ...string) *client.Client {
	t.Helper()
	if len(servers) == 0 {
		servers = c.addrs
	}
	cl, err := client.New(client.Config{Servers: servers})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
