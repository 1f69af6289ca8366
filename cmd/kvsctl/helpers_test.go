package main

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/auth"
	"github.com/batchkv/batchkv/kvs"
)

// The servers the tests run kvsctl against, on loopback ports of their
// own, and what the tests read its output with.

// quietLogger drops the servers' logs.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// listen listens on a free loopback port.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return ln
}

// startPlain starts one memory-only server (no replication), over TLS
// with id when it is set, and returns its address.
func startPlain(t *testing.T, id *auth.Identity) string {
	t.Helper()
	ln := listen(t)
	srv, err := kvs.New(kvs.Config{Identity: id, Logger: quietLogger()})
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// deadAddr returns an address where nothing listens.
func deadAddr(t *testing.T) string {
	ln := listen(t)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// rf3Cluster is three servers replicating shards at RF=3, each with a
// data dir of its own; a test may close a server and start it again.
type rf3Cluster struct {
	t       *testing.T
	shards  int
	addrs   []string
	dirs    []string
	servers []*kvs.Server
}

// startRF3 starts three servers replicating shards at RF=3.
func startRF3(t *testing.T, shards int) *rf3Cluster {
	t.Helper()
	c := &rf3Cluster{t: t, shards: shards, servers: make([]*kvs.Server, 3)}
	var lns []net.Listener
	for range 3 {
		ln := listen(t)
		lns = append(lns, ln)
		c.addrs = append(c.addrs, ln.Addr().String())
		c.dirs = append(c.dirs, t.TempDir())
	}
	for i, ln := range lns {
		c.serve(i, ln)
	}
	t.Cleanup(func() {
		for _, s := range c.servers {
			_ = s.Close()
		}
	})
	return c
}

// restart starts server i again, on its address and data dir, after the
// test closed it.
func (c *rf3Cluster) restart(i int) {
	var ln net.Listener
	require.Eventually(c.t, func() bool {
		var err error
		ln, err = net.Listen("tcp", c.addrs[i])
		return err == nil
	}, 5*time.Second, 20*time.Millisecond)
	c.serve(i, ln)
}

func (c *rf3Cluster) serve(i int, ln net.Listener) {
	srv, err := kvs.New(kvs.Config{Self: c.addrs[i], Peers: c.addrs, RF: 3, Shards: c.shards,
		DataDir: c.dirs[i], Logger: quietLogger()})
	require.NoError(c.t, err)
	go func() { _ = srv.Serve(ln) }()
	c.servers[i] = srv
}

// syncBuffer is a bytes.Buffer that a command and the test may use at
// once.
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
