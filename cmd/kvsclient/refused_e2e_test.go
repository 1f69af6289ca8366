package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/kvs/memlimit"
)

// TestRefusedOpsAreNotThroughput: against a server at its least
// -max-memory, filled near its stores' share by a first load, a second
// load whose values are twice as large has its puts refused (no memory)
// as the stores fill; the client reports them apart, and its throughput
// counts only the ops served.
func TestRefusedOpsAreNotThroughput(t *testing.T) {
	srv, err := kvs.New(kvs.Config{MaxMemory: memlimit.Min, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := []string{"-hosts", ln.Addr().String(), "-numClients", "4", "-batchSize", "64", "-records", "18000", "-seed", "7"}
	require.NoError(t, run(ctx, append(base, "-secs", "1", "-valueBytes", "4096", "-workload", "YCSB-C"), io.Discard))

	var out bytes.Buffer
	const secs = 3
	require.NoError(t, run(ctx, append(base, "-secs", strconv.Itoa(secs), "-valueBytes", "8192", "-workload", "YCSB-A",
		"-preload=false"), &out))
	refused := number(t, out.String(), `refused_ops (\d+)`)
	batches := number(t, out.String(), `\nbatch latency .*\((\d+) batches\)`)
	throughput := number(t, out.String(), `\nthroughput (\d+) ops/s`)
	require.Positive(t, refused, out.String())
	require.Contains(t, out.String(), "refused ops by status: no memory ", out.String())
	sent := batches * 64
	t.Logf("ops sent %d, refused %d, throughput %d ops/s over %d s", sent, refused, throughput, secs)
	require.Greater(t, refused, sent/5, "most puts refused once the stores are full")
	// The run lasts secs and a little more: its throughput is at most the
	// ops served over 0.9 secs; counted with the refused ops it would be
	// far more.
	require.LessOrEqual(t, throughput, (sent-refused)*10/(9*secs), out.String())
}

// number returns the integer that re's group matches in out.
func number(t *testing.T, out, re string) int {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(out)
	require.NotNil(t, m, "%s in\n%s", re, out)
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return n
}
