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
// previous to return. It prints the latency percentiles of each.
func syncLatency(ctx context.Context, cl *client.Client, n int, value string, stdout io.Writer) error {
	key := func(i int) string { return fmt.Sprintf("sync%08d", i) }
	for _, phase := range []string{"put", "get"} {
		lat := make([]time.Duration, 0, n)
		for i := range n {
			op := wire.Op{Code: wire.OpGet, Key: key(i)}
			if phase == "put" {
				op = wire.Op{Code: wire.OpPut, Key: key(i), Value: value}
			}
			// One op per batch, sent at once: no auto-batching linger.
			start := time.Now()
			res, err := cl.Do(ctx, []wire.Op{op})
			switch {
			case err != nil:
			case res[0].Status != wire.StatusOK:
				err = fmt.Errorf("%s %s: %s", phase, key(i), res[0].Status)
			case phase == "get" && res[0].Value != value:
				err = fmt.Errorf("get %s: got %d bytes, want the %d put", key(i), len(res[0].Value), len(value))
			}
			if err != nil {
				return fmt.Errorf("sync %s %d: %w", phase, i, err)
			}
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
		fmt.Fprintf(stdout, "sync %s n %d p50 %v p90 %v p99 %v p99.9 %v p99.99 %v max %v\n", phase, n,
			pct(0.50), pct(0.90), pct(0.99), pct(0.999), pct(0.9999), lat[len(lat)-1])
	}
	return nil
}
