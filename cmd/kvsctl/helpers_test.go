package main

import (
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/auth"
	"github.com/batchkv/batchkv/internal/clustertest"
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

// startRF3 starts three servers replicating shards at RF=3, each with a
// data dir of its own; a test may stop a server and start it again.
func startRF3(t *testing.T, shards int) *clustertest.Cluster {
	t.Helper()
	return clustertest.New(t, 3, 3, shards)
}
