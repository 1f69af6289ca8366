package main

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/kvs/memlimit"
	"github.com/batchkv/batchkv/wire"
)

func TestRefusedOpsCountsUndecidedResults(t *testing.T) {
	var r refusedOps
	n := r.count([]wire.Result{
		{Status: wire.StatusOK}, {Status: wire.StatusNotFound}, {Status: wire.StatusMismatch},
		{Status: wire.StatusMismatchNotFound}, {Status: wire.StatusNoMemory}, {Status: wire.StatusNoMemory},
		{Status: wire.StatusNoSpace},
	})
	require.Equal(t, 3, n)
	require.EqualValues(t, 3, r.total())
	require.Equal(t, wire.StatusNoSpace.String()+" 1, "+wire.StatusNoMemory.String()+" 2", r.String())
}

// TestRefusedOpsAreNotThroughput: against a server at its least
// -max-memory, filled near its stores' share by a first load, a second
// load whose values are twice as large has its puts refused (no memory)
// as the stores fill; the client reports them apart, and its throughput
// counts only the ops served.
func TestRefusedOpsAreNotThroughput(t *testing.T) {
	addr := serveConfig(t, kvs.Config{MaxMemory: memlimit.Min})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := []string{"-hosts", addr, "-numClients", "4", "-batchSize", "64", "-records", "18000", "-seed", "7"}
	require.NoError(t, run(ctx, append(base, "-secs", "1", "-valueBytes", "4096", "-workload", "YCSB-C"), io.Discard))

	var out bytes.Buffer
	const secs = 3
	require.NoError(t, run(ctx, append(base, "-secs", strconv.Itoa(secs), "-valueBytes", "8192", "-workload", "YCSB-A",
		"-preload=false"), &out))
	refused := number(t, out.String(), `refused_ops (\d+)`)
	batches := batchesIn(t, out.String(), "batch latency ")
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
