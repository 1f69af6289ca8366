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

	"github.com/batchkv/batchkv/auth"
	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/cli"
	"github.com/batchkv/batchkv/internal/tlsflags"
	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/kvs/store"
)

// batchesIn returns the batch count of out's line that starts with
// prefix followed by the latency quantiles, or -1 if there is none.
func batchesIn(t *testing.T, out, prefix string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(prefix) + `p50 \S+ p99 \S+ p99.9 \S+ p99.99 \S+ max \S+ \((\d+) batches\)$`).FindStringSubmatch(out)
	if m == nil {
		return -1
	}
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return n
}

// TestWarmupLeavesOutTheFirstBatches: the "after warm-up" line counts
// only the batches started after -warmup, the "batch latency" line all of
// them; with a warm-up longer than the run, the line is left out.
func TestWarmupLeavesOutTheFirstBatches(t *testing.T) {
	st, _ := store.New(store.DefaultKind)
	addr := serve(t, st)
	load := func(warmup string) string {
		var out bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, run(ctx, []string{"-hosts", addr, "-secs", "2", "-warmup", warmup,
			"-numClients", "4", "-batchSize", "64", "-records", "2000", "-seed", "7"}, &out))
		return out.String()
	}
	out := load("1s")
	all := batchesIn(t, out, "batch latency ")
	steady := batchesIn(t, out, "after warm-up (batches started 1s or more into the load): batch latency ")
	require.Positive(t, steady, out)
	require.Less(t, steady, all, "the warm-up's batches are left out")
	// About half the run is warm-up: far fewer than all, far more than none.
	require.InDelta(t, 0.5, float64(steady)/float64(all), 0.3, out)

	out = load("5s")
	require.Positive(t, batchesIn(t, out, "batch latency "), out)
	require.Equal(t, -1, batchesIn(t, out, "after warm-up (batches started 5s or more into the load): batch latency "), out)

	_, err := parse([]string{"-warmup", "-1s"})
	require.ErrorContains(t, err, "-warmup")
}

// TestPerSecondLatency: each second's latency line follows that second's
// rate line and counts the batches that ended in it, as many as the rate
// says; its quantiles are ordered and no second's max exceeds the run's.
func TestPerSecondLatency(t *testing.T) {
	st, _ := store.New(store.DefaultKind)
	addr := serve(t, st)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const batchSize = 64
	require.NoError(t, run(ctx, []string{"-hosts", addr, "-secs", "3", "-numClients", "4", "-batchSize", strconv.Itoa(batchSize),
		"-records", "2000", "-seed", "7"}, &out))
	runMax := regexp.MustCompile(`(?m)^batch latency .* max (\S+) \(`).FindStringSubmatch(out.String())
	require.NotNil(t, runMax, out.String())
	maxOfRun, err := time.ParseDuration(runMax[1])
	require.NoError(t, err)

	seconds := regexp.MustCompile(`(?m)^client ops/s (\S+)\nutil .*\nclient second_latency p50 (\S+) p99 (\S+) max (\S+) \((\d+) batches\)$`).FindAllStringSubmatch(out.String(), -1)
	require.GreaterOrEqual(t, len(seconds), 2, out.String())
	for _, sec := range seconds {
		rate, err := strconv.ParseFloat(sec[1], 64)
		require.NoError(t, err)
		n, err := strconv.Atoi(sec[5])
		require.NoError(t, err)
		// The rate is the ops of the batches that ended over about one
		// second; a batch may end just across the tick from its count.
		require.InDelta(t, rate, float64(n*batchSize), 0.1*rate+2*batchSize, "second: %q", sec[0])
		var d [3]time.Duration
		for i := range d {
			d[i], err = time.ParseDuration(sec[i+2])
			require.NoError(t, err)
		}
		require.True(t, 0 < d[0] && d[0] <= d[1] && d[1] <= d[2] && d[2] <= maxOfRun, "p50 %v p99 %v max %v, run's max %v", d[0], d[1], d[2], maxOfRun)
	}
}

// TestHelpExitsZero: -help is not an error (the usage goes to stdout).
func TestHelpExitsZero(t *testing.T) {
	_, err := parse([]string{"-help"})
	require.ErrorIs(t, err, cli.ErrHelpShown)
	require.Equal(t, 0, cli.Exit(err))
	_, err = parse([]string{"-bogus"})
	require.Equal(t, 1, cli.Exit(err))
}

// TestTLSMismatchStops: a load client without the TLS flags against a TLS
// server stops at once with the flags to give, instead of a load of
// failed batches.
func TestTLSMismatchStops(t *testing.T) {
	ids, err := auth.MakeLocal(t.TempDir(), []string{"127.0.0.1"})
	require.NoError(t, err)
	addr := serveConfig(t, kvs.Config{Identity: ids.Node})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = run(ctx, []string{"-hosts", addr, "-secs", "1", "-records", "100"}, io.Discard)
	require.ErrorIs(t, err, client.ErrServerWantsTLS)
	require.ErrorContains(t, tlsflags.Hint(err), "give -tls-ca")
}
