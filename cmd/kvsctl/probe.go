package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
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

// probe runs `kvsctl probe [-for d] [-interval d] SHARD`: it writes one
// key of the shard every interval, each write with its own deadline, and
// prints a title, "ok UNIX_MS LATENCY_MS" or "fail UNIX_MS ERROR" per
// write, and a summary, for -for (0: until SIGINT or SIGTERM).
// benchmark-failover.sh reads the gap between a kill and the next "ok".
func probe(args []string, cfg client.Config, timeout time.Duration, interval time.Duration, stdout io.Writer) error {
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	span := fs.Duration("for", 10*time.Second, "how long to probe (0: until Ctrl-C)")
	fs.DurationVar(&interval, "interval", interval, "pause between writes")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 || *span < 0 || interval < 0 {
		return fmt.Errorf("usage: kvsctl probe [-for 10s] [-interval 10ms] SHARD (kvsctl help probe explains it)")
	}
	if cfg.Shards == 0 {
		return fmt.Errorf("probe needs a replicated cluster (servers started with -rf 3, or -in-memory); this one places keys on a fixed ring")
	}
	sh, err := shardArg(fs.Arg(0), cfg)
	if err != nil {
		return err
	}
	layout, err := shard.New(cfg.Servers, cfg.Shards, cfg.RF, cfg.VirtualNodes)
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
	until := "until Ctrl-C"
	if *span > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *span)
		defer cancel()
		until = "for " + span.String()
	}
	fmt.Fprintf(stdout, "# probe of shard %d: a write of key %q every %v, %s, each within %v\n", sh, key, interval, until, timeout)
	fmt.Fprintln(stdout, "# ok UNIX_MS LATENCY_MS | fail UNIX_MS ERROR")
	var sum probeSummary
	for n := 0; ctx.Err() == nil; n++ {
		start := time.Now()
		wctx, cancel := context.WithTimeout(context.Background(), timeout)
		res, err := cl.Do(wctx, []wire.Op{{Code: wire.OpPut, Key: key, Value: strconv.Itoa(n)}})
		cancel()
		if err == nil && res[0].Status != wire.StatusOK {
			err = fmt.Errorf("%s", res[0].Status)
		}
		now := time.Now()
		if err != nil {
			fmt.Fprintf(stdout, "fail %d %v\n", now.UnixMilli(), err)
		} else {
			fmt.Fprintf(stdout, "ok %d %.1f\n", now.UnixMilli(), float64(now.Sub(start).Microseconds())/1000)
		}
		sum.add(start, now, err == nil)
		select {
		case <-time.After(interval):
		case <-ctx.Done():
		}
	}
	fmt.Fprintln(stdout, "# "+sum.String())
	if sum.ok == 0 {
		return fmt.Errorf("probe of shard %d: no write was acknowledged", sh)
	}
	return nil
}

// probeSummary tallies a probe's writes.
type probeSummary struct {
	ok, failed int
	latencies  []time.Duration
	first      time.Time // the first write's start
	lastOK     time.Time // the end of the last acknowledged write
	longestGap time.Duration
}

// add records one write that started at start and ended at end.
func (p *probeSummary) add(start, end time.Time, ok bool) {
	if p.first.IsZero() {
		p.first, p.lastOK = start, start
	}
	if !ok {
		p.failed++
		return
	}
	p.ok++
	p.latencies = append(p.latencies, end.Sub(start))
	p.longestGap = max(p.longestGap, end.Sub(p.lastOK))
	p.lastOK = end
}

// String is the summary line.
func (p *probeSummary) String() string {
	if p.ok == 0 {
		return fmt.Sprintf("%d writes, none acknowledged", p.failed)
	}
	slices.Sort(p.latencies)
	pct := func(q float64) time.Duration { return p.latencies[int(q*float64(len(p.latencies)-1))] }
	return fmt.Sprintf("%d writes: %d ok, %d failed; latency p50 %v, p99 %v, max %v; longest time without an acknowledged write %v",
		p.ok+p.failed, p.ok, p.failed, pct(0.5).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond),
		p.latencies[len(p.latencies)-1].Round(10*time.Microsecond), p.longestGap.Round(time.Millisecond))
}
