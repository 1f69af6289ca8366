package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/wire"
)

// syncLatency is the Raft seed's experiment: n synchronous single-op puts
// from one goroutine, then n gets of the same keys, each waiting for the
// previous to return, over keys it loads first, untimed. It runs them twice: as batches of one op (Do), and
// through the client's Put and Get, whose auto-batcher must send a lone
// op at once. It prints the latency percentiles of each.
func syncLatency(ctx context.Context, cl *client.Client, n int, value string, stdout io.Writer) error {
	key := func(i int) string { return fmt.Sprintf("sync%08d", i) }
	// The keys are loaded first, untimed, as benchmark-latency.sh loads
	// Redis's: a timed put overwrites, and the first op dials no
	// connection.
	for from := 0; from < n; from += 1000 {
		ops := make([]wire.Op, 0, 1000)
		for i := from; i < min(n, from+1000); i++ {
			ops = append(ops, wire.Op{Code: wire.OpPut, Key: key(i), Value: value})
		}
		if _, err := cl.Do(ctx, ops); err != nil {
			return fmt.Errorf("loading the keys: %w", err)
		}
	}
	phases := []struct{ op, via string }{{"put", "Do"}, {"get", "Do"}, {"put", "Put"}, {"get", "Get"}}
	for _, ph := range phases {
		lat := make([]time.Duration, 0, n)
		for i := range n {
			start := time.Now()
			got, err := syncOne(ctx, cl, ph.op, ph.via, key(i), value)
			if err == nil && ph.op == "get" && got != value {
				err = fmt.Errorf("got %d bytes, want the %d put", len(got), len(value))
			}
			if err != nil {
				return fmt.Errorf("sync %s via %s %s: %w", ph.op, ph.via, key(i), err)
			}
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
		fmt.Fprintf(stdout, "sync %s via %s n %d p50 %v p90 %v p99 %v p99.9 %v p99.99 %v max %v\n", ph.op, ph.via, n,
			pct(0.50), pct(0.90), pct(0.99), pct(0.999), pct(0.9999), lat[len(lat)-1])
	}
	return nil
}

// syncOne runs one op (put or get) via Do (a batch of one) or via the
// client's Put or Get, and returns the value a get read.
func syncOne(ctx context.Context, cl *client.Client, op, via, key, value string) (string, error) {
	switch via {
	case "Put":
		return "", cl.Put(ctx, key, value)
	case "Get":
		return cl.Get(ctx, key)
	}
	o := wire.Op{Code: wire.OpGet, Key: key}
	if op == "put" {
		o = wire.Op{Code: wire.OpPut, Key: key, Value: value}
	}
	res, err := cl.Do(ctx, []wire.Op{o})
	if err != nil {
		return "", err
	}
	if res[0].Status != wire.StatusOK {
		return "", fmt.Errorf("status %s", res[0].Status)
	}
	return res[0].Value, nil
}
