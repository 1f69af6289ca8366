package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// leader prints the address of shard's leader as the first replica that
// knows one says.
func leader(admin client.Admin, cfg client.Config, timeout time.Duration, sh int, stdout io.Writer) error {
	for _, srv := range cfg.Servers {
		st, err := admin.Status(srv, wire.StatusRequest{}, timeout)
		if err != nil {
			continue
		}
		for _, s := range st.Shards {
			if s.Shard == sh && s.Leader != "" {
				fmt.Fprintln(stdout, s.Leader)
				return nil
			}
		}
	}
	return fmt.Errorf("no replica of shard %d knows a leader", sh)
}

// probe writes one key of shard sh every interval, each write with its own
// deadline, and prints "ok UNIX_MS LATENCY_MS" or "fail UNIX_MS ERROR" per
// write until SIGINT or SIGTERM. benchmark-failover.sh reads the gap
// between a kill and the next "ok".
func probe(cfg client.Config, timeout time.Duration, sh int, interval time.Duration, stdout io.Writer) error {
	if cfg.Shards == 0 {
		return fmt.Errorf("probe needs a replicated cluster")
	}
	layout, err := shard.New(cfg.Servers, cfg.Shards, cfg.Replicas, cfg.VirtualNodes)
	if err != nil {
		return err
	}
	key := ""
	for i := 0; ; i++ {
		if k := "probe" + strconv.Itoa(i); layout.Shard(k) == sh {
			key = k
			break
		}
	}
	// Realistic timeouts: a silent server is given up after a second.
	cfg.AttemptTimeout = time.Second
	cl, err := client.New(cfg)
	if err != nil {
		return err
	}
	defer func() { _ = cl.Close() }()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for n := 0; ctx.Err() == nil; n++ {
		start := time.Now()
		wctx, cancel := context.WithTimeout(ctx, timeout)
		res, err := cl.Do(wctx, []wire.Op{{Code: wire.OpPut, Key: key, Value: strconv.Itoa(n)}})
		cancel()
		if err == nil && res[0].Status != wire.StatusOK {
			err = fmt.Errorf("%s", res[0].Status)
		}
		if err != nil {
			fmt.Fprintf(stdout, "fail %d %v\n", time.Now().UnixMilli(), err)
		} else {
			fmt.Fprintf(stdout, "ok %d %.1f\n", time.Now().UnixMilli(), float64(time.Since(start).Microseconds())/1000)
		}
		select {
		case <-time.After(interval):
		case <-ctx.Done():
		}
	}
	return nil
}
