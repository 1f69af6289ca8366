package main

import (
	"io"
	"log/slog"
	"testing"

	"github.com/batchkv/batchkv/internal/clustertest"
)

// quietLogger drops the logs of what the tests start.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startRF3 starts three servers replicating shards at RF=3 on loopback,
// each with a data dir of its own, and returns their addresses.
func startRF3(t *testing.T, shards int) []string {
	t.Helper()
	return clustertest.New(t, 3, 3, shards).Addrs()
}
