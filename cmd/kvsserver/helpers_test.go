package main

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/kvs"
)

// quietLogger drops the logs of what the tests start.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startRF3 starts three servers replicating shards at RF=3 on loopback,
// each with a data dir of its own, and returns their addresses.
func startRF3(t *testing.T, shards int) []string {
	t.Helper()
	var lns []net.Listener
	var addrs []string
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	for i, ln := range lns {
		srv, err := kvs.New(kvs.Config{Self: addrs[i], Peers: addrs, RF: 3, Shards: shards, DataDir: t.TempDir(),
			Logger: quietLogger()})
		require.NoError(t, err)
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
	}
	return addrs
}

// syncBuffer is a bytes.Buffer safe for a logger and a reader at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
