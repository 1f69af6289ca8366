package kvs_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/wire"
)

// requestBudgetAttack has peers connections each pipeline batches routed
// batches of 8,192 gets of a 512-byte value (a 4 MiB reply each) and never
// read, against a server whose reply budgets are too large to act, with
// the given request budgets. It returns how many of the batches the server
// read and served, and the most its requests held at once.
func requestBudgetAttack(t *testing.T, server, conn int64, peers, batches int) (served uint64, peak int64) {
	srv, addr := startServer(t, kvs.Config{Limits: kvs.Limits{ReplyBudget: 1 << 40, ConnReplyBudget: 1 << 40,
		RequestBudget: server, ConnRequestBudget: conn, WriteTimeout: time.Minute}})
	cl, err := client.New(client.Config{Servers: []string{addr}})
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, cl.Put(ctx, "k", strings.Repeat("v", 512)))
	before := srv.Stats().Gets.Load()

	ops := make([]wire.Op, 8192)
	for i := range ops {
		ops[i] = wire.Op{Code: wire.OpGet, Key: "k"}
	}
	out := []byte(wire.Preamble)
	for i := range batches {
		// Routed (a non-zero RingID): a batch that a server forwards is not
		// charged (RequestBytes).
		out = append(out, binaryFrame(uint64(i+1), &wire.BatchArgs{RingID: 1, Ops: ops})...)
	}
	for range peers {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		require.NoError(t, c.(*net.TCPConn).SetReadBuffer(4096))
		// The server may stop reading: write without waiting for it.
		go func() { _, _ = c.Write(out) }()
	}
	// Let the server read and serve what it will.
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		peak = max(peak, int64(gauge(t, srv, "batchkv_request_held_bytes")))
	}
	return (srv.Stats().Gets.Load() - before) / uint64(len(ops)), peak
}

// TestRequestBudgetStopsReading: peers that pipeline 20 batches of 8,192
// gets each (663,552 bytes of requests and results a batch, as
// RequestBytes counts them) and never read their 4 MiB replies. With a
// server-wide request budget of 2 MiB, the server reads no connection
// further once its requests hold that, so it serves a few of the 40
// batches and its requests hold at most the budget and one request per
// connection; the same with a per-connection budget of 2 MiB on one
// connection. With the budgets too large to act (the fault the test must
// catch), it reads and serves most of them.
func TestRequestBudgetStopsReading(t *testing.T) {
	if testing.Short() {
		t.Skip("holds about 200 MiB of replies")
	}
	const perBatch = 8192 * 81 // RequestBytes of one batch: a 1-byte key
	const budget = 2 << 20

	served, peak := requestBudgetAttack(t, budget, 1<<40, 2, 20)
	t.Logf("server-wide budget of 2 MiB, 2 peers: %d of 40 batches served, requests held at most %d bytes", served, peak)
	require.LessOrEqual(t, peak, int64(budget+2*perBatch), "requests held past the budget and one request per connection")
	require.LessOrEqual(t, served, uint64(12), "the server read on past its request budget")

	served, peak = requestBudgetAttack(t, 1<<40, budget, 1, 20)
	t.Logf("per-connection budget of 2 MiB: %d of 20 batches served, requests held at most %d bytes", served, peak)
	require.LessOrEqual(t, peak, int64(budget+perBatch), "one connection's requests held past its budget and one request")
	require.LessOrEqual(t, served, uint64(8), "the server read on past the connection's request budget")

	served, peak = requestBudgetAttack(t, 1<<40, 1<<40, 2, 20)
	t.Logf("budgets too large to act: %d of 40 batches served, requests held at most %d bytes", served, peak)
	require.Greater(t, served, uint64(24), "without request budgets the server should read and serve most batches")
}
