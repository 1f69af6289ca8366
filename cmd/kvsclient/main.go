// Command kvsclient is the load generator: -numClients goroutines each send
// batches of -batchSize YCSB ops to the servers in -hosts for -secs seconds,
// after loading every key once.
//
//	kvsclient -hosts 127.0.0.1:8080 -workload YCSB-B -secs 30
//
// With -protocol resp it speaks RESP instead, each batch one pipeline of
// GET and SET commands, so the same load runs against Redis, or any
// server that speaks RESP:
//
//	kvsclient -protocol resp -hosts 127.0.0.1:6379 -workload YCSB-B
//
// Every second it prints its own throughput and utilization; at the end,
// "throughput <N> ops/s" and the batch round-trip latency percentiles.
// With -check, a few more goroutines work on a few hot keys, and
// the run ends with porcupine's verdict on their history:
// "linearizable: N ops" or the violation and the path of its
// visualization (and a non-zero exit).
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/cli"
	"github.com/batchkv/batchkv/internal/latency"
	"github.com/batchkv/batchkv/internal/procstat"
	"github.com/batchkv/batchkv/internal/tlsflags"
	"github.com/batchkv/batchkv/ring"
	"github.com/batchkv/batchkv/wire"
	"github.com/batchkv/batchkv/workload"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout)
	if err != nil && !errors.Is(err, cli.ErrHelpShown) {
		fmt.Fprintln(os.Stderr, "kvsclient:", tlsflags.Hint(err))
	}
	stop()
	os.Exit(cli.Exit(err))
}

type options struct {
	hosts      []string
	workload   string
	theta      float64
	secs       int
	warmup     time.Duration
	numClients int
	batchSize  int
	records    uint64
	valueBytes int
	preload    bool
	seed       uint64
	codec      string
	protocol   string
	conns      int
	vnodes     int
	cpuprofile string
	syncOps    int
	syncBlock  int
	syncRedis  string
	lonePoll   time.Duration
	tls        *tls.Config

	stallConns, stallRequests, stallGets, stallValueBytes int

	check        bool
	checkClients int
	checkKeys    int
	checkTimeout time.Duration
	checkHTML    string
}

func parse(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("kvsclient", flag.ContinueOnError)
	hosts := fs.String("hosts", "localhost:8080", "comma-separated host:port of the servers, as given to their -peers")
	fs.StringVar(&o.workload, "workload", "YCSB-B", "YCSB-A (50% reads), YCSB-B (95%) or YCSB-C (100%)")
	fs.Float64Var(&o.theta, "theta", workload.DefaultTheta, "Zipfian skew in [0, 1); 0 is uniform")
	fs.IntVar(&o.secs, "secs", 30, "seconds to run the measured load")
	fs.DurationVar(&o.warmup, "warmup", 3*time.Second, "batches started within this long of the load's start are left out of the \"after warm-up\" latency line (the \"batch latency\" line counts them all)")
	fs.IntVar(&o.numClients, "numClients", 128, "goroutines sending batches")
	fs.IntVar(&o.batchSize, "batchSize", 8192, "ops per batch")
	fs.Uint64Var(&o.records, "records", workload.DefaultRecords, "number of keys")
	fs.IntVar(&o.valueBytes, "valueBytes", workload.DefaultValueBytes, "bytes per value")
	fs.BoolVar(&o.preload, "preload", true, "write every key once before measuring")
	fs.Uint64Var(&o.seed, "seed", 0, "seed of the workload (0: from the clock); goroutine i uses seed+i")
	fs.StringVar(&o.codec, "codec", client.DefaultCodec, "wire encoding: binary or gob")
	fs.StringVar(&o.protocol, "protocol", "batchkv", "batchkv (the client library) or resp: each batch one pipeline of GET/SET on a connection of its own, to any Redis server (or batchkv's RESP)")
	fs.IntVar(&o.conns, "conns", client.DefaultConnsPerServer, "TCP connections per server")
	fs.IntVar(&o.vnodes, "vnodes", 0, fmt.Sprintf("virtual nodes per server; must match the servers' (0: %d)", ring.DefaultVirtualNodes))
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the measured load to this file")
	fs.IntVar(&o.syncOps, "sync-ops", 0, "instead of the load: load this many keys, then time as many synchronous single puts over them, then as many gets, from one goroutine, each op as a batch of one (Do) and through Put or Get in turn; print their latency percentiles")
	fs.DurationVar(&o.lonePoll, "lone-poll", client.DefaultLonePoll, "the longest a lone call polls its socket for its reply before it sleeps (client.Config.LonePoll); negative: never poll")
	fs.IntVar(&o.syncBlock, "sync-block", 1, "with -sync-ops: ops each way takes in a row before the next way takes its turn (1: op by op)")
	fs.StringVar(&o.syncRedis, "sync-redis", "", "with -sync-ops: host:port of a Redis server that each op is also sent to, as one command, interleaved with the others")
	fs.BoolVar(&o.check, "check", false, "check the run: -check-clients more goroutines work on -check-keys hot keys, every op recorded, and porcupine checks their history when the run ends")
	fs.IntVar(&o.checkClients, "check-clients", 4, "with -check: goroutines on the hot keys, besides the -numClients of the load")
	fs.IntVar(&o.checkKeys, "check-keys", 8, "with -check: hot keys")
	fs.DurationVar(&o.checkTimeout, "check-timeout", time.Minute, "with -check: the longest the check may take")
	fs.IntVar(&o.stallConns, "stall-conns", 0, "before the load, open this many connections to the first host that pipeline requests for a large value and never read the replies (the pipelining attack on a server's memory); they stay open through the load")
	fs.IntVar(&o.stallRequests, "stall-requests", 6, "with -stall-conns: batches each connection pipelines")
	fs.IntVar(&o.stallGets, "stall-gets", 400, "with -stall-conns: gets of the large value in each batch")
	fs.IntVar(&o.stallValueBytes, "stall-value-bytes", wire.MaxValueBytes, "with -stall-conns: bytes of the large value")
	fs.StringVar(&o.checkHTML, "check-html", "", "with -check: where to write porcupine's visualization of a violation (default: kvsclient-check-PID.html in the temporary directory)")
	tf := tlsflags.Register(fs)
	if err := cli.Parse(fs, args, os.Stdout, os.Stderr); err != nil {
		return nil, err
	}
	id, err := tf.Load()
	if err != nil {
		return nil, err
	}
	if id != nil {
		o.tls = id.ClientConfig()
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	o.hosts = strings.Split(*hosts, ",")
	switch {
	case o.secs <= 0:
		return nil, errors.New("-secs must be positive")
	case o.warmup < 0:
		return nil, errors.New("-warmup must not be negative")
	case o.numClients <= 0:
		return nil, errors.New("-numClients must be positive")
	case o.batchSize <= 0 || o.batchSize > wire.MaxBatchOps:
		return nil, fmt.Errorf("-batchSize must be in [1, %d]", wire.MaxBatchOps)
	case o.valueBytes < 0 || o.valueBytes > wire.MaxValueBytes:
		return nil, fmt.Errorf("-valueBytes must be in [0, %d]", wire.MaxValueBytes)
	case o.stallConns < 0 || o.stallConns > 4096:
		return nil, errors.New("-stall-conns must be in [0, 4096]")
	case o.stallConns > 0 && (o.stallRequests < 1 || o.stallGets < 1 || o.stallGets > wire.MaxBatchOps):
		return nil, fmt.Errorf("-stall-requests must be positive and -stall-gets in [1, %d]", wire.MaxBatchOps)
	case o.stallConns > 0 && (o.stallValueBytes < 1 || o.stallValueBytes > wire.MaxValueBytes):
		return nil, fmt.Errorf("-stall-value-bytes must be in [1, %d]", wire.MaxValueBytes)
	case o.stallConns > 0 && o.tls != nil:
		return nil, errors.New("-stall-conns speaks plaintext only")
	}
	if o.check {
		switch {
		case o.checkClients < 1 || o.checkClients > 1024:
			return nil, errors.New("-check-clients must be in [1, 1024]")
		case o.checkKeys < 1:
			return nil, errors.New("-check-keys must be positive")
		case o.checkTimeout <= 0:
			return nil, errors.New("-check-timeout must be positive")
		}
		if o.checkHTML == "" {
			o.checkHTML = filepath.Join(os.TempDir(), fmt.Sprintf("kvsclient-check-%d.html", os.Getpid()))
		}
	}
	if o.protocol != "batchkv" && o.protocol != "resp" {
		return nil, fmt.Errorf("-protocol %q: want batchkv or resp", o.protocol)
	}
	if _, err := workload.ReadFraction(o.workload); err != nil {
		return nil, err
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "config hosts=%s workload=%s theta=%v secs=%d numClients=%d batchSize=%d records=%d valueBytes=%d protocol=%s codec=%s conns=%d tls=%t seed=%d check=%t\n",
		strings.Join(o.hosts, ","), o.workload, o.theta, o.secs, o.numClients, o.batchSize, o.records, o.valueBytes, o.protocol, o.codec, o.conns, o.tls != nil, o.seed, o.check)
	cl, err := newClient(o, stdout)
	if err != nil {
		return err
	}
	defer cl.Close()
	if o.syncOps > 0 {
		lib, ok := cl.(*client.Client)
		if !ok {
			return errors.New("-sync-ops needs -protocol batchkv (for RESP, redis-benchmark -c 1 -P 1 measures lone commands)")
		}
		if o.syncBlock < 1 || o.syncBlock > o.syncOps {
			return fmt.Errorf("-sync-block %d: want 1 to -sync-ops (%d)", o.syncBlock, o.syncOps)
		}
		return syncLatency(ctx, lib, syncOptions{redisAddr: o.syncRedis, lonePoll: o.lonePoll, n: o.syncOps, block: o.syncBlock,
			value: strings.Repeat("v", o.valueBytes)}, stdout)
	}
	if o.preload {
		start := time.Now()
		if err := preload(ctx, cl, o); err != nil {
			return fmt.Errorf("preload: %w", err)
		}
		fmt.Fprintf(stdout, "preloaded %d keys in %.2fs\n", o.records, time.Since(start).Seconds())
	}
	if o.stallConns > 0 {
		stop, err := stall(ctx, cl, o.hosts[0], o.stallConns, o.stallRequests, o.stallGets, o.stallValueBytes, stdout)
		if err != nil {
			return err
		}
		defer stop()
	}
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	return measure(ctx, cl, o, stdout)
}

// newClient returns the client of o.protocol: over RESP, a respClient of
// the hosts; else the client library, with the layout the first host
// answers.
func newClient(o *options, stdout io.Writer) (batchClient, error) {
	if o.protocol == "resp" {
		return newRESPClient(o.hosts, o.tls), nil
	}
	cfg := client.Config{Servers: o.hosts, Codec: o.codec, ConnsPerServer: o.conns, VirtualNodes: o.vnodes, TLS: o.tls, LonePoll: o.lonePoll}
	if l, err := (client.Admin{TLS: o.tls}).Discover(o.hosts[0], 5*time.Second); tlsflags.IsMismatch(err) {
		return nil, err
	} else if err != nil {
		fmt.Fprintf(stdout, "layout: %s did not answer (%v); routing over -hosts\n", o.hosts[0], err)
	} else if l.Shards > 0 {
		cfg.Servers, cfg.Shards, cfg.RF, cfg.VirtualNodes = l.Servers, l.Shards, l.RF, l.VirtualNodes
		fmt.Fprintf(stdout, "layout replicated servers=%s shards=%d rf=%d\n", strings.Join(l.Servers, ","), l.Shards, l.RF)
	}
	return client.New(cfg)
}

// preloadBatch is the batch size of the preload, whatever -batchSize is,
// so that a sweep's small batches do not make loading slow.
const preloadBatch = 8192

// preload writes every key once, in batches of preloadBatch, from up to
// numClients goroutines.
func preload(ctx context.Context, cl batchClient, o *options) error {
	keys := workload.Keys(o.records)
	value := workload.Value(o.valueBytes, o.seed)
	var next atomic.Uint64
	g, ctx := errgroup.WithContext(ctx)
	for range min(o.numClients, 32) {
		g.Go(func() error {
			ops := make([]wire.Op, 0, preloadBatch)
			for {
				from := next.Add(preloadBatch) - preloadBatch
				if from >= o.records {
					return nil
				}
				ops = ops[:0]
				for k := from; k < min(from+preloadBatch, o.records); k++ {
					ops = append(ops, wire.Op{Code: wire.OpPut, Key: keys[k], Value: value})
				}
				res, err := cl.Do(ctx, ops)
				if err != nil {
					return err
				}
				for _, r := range res {
					if r.Status != wire.StatusOK {
						return fmt.Errorf("put refused: %s", r.Status)
					}
				}
			}
		})
	}
	return g.Wait()
}

// secondLatency collects the latencies of one goroutine's batches that
// end within one second. Each goroutine has its own, so that its lock is
// only ever contended by the once-a-second drain.
type secondLatency struct {
	mu sync.Mutex
	h  latency.Histogram
}

// record adds the latency of a batch that has just ended.
func (s *secondLatency) record(d time.Duration) {
	s.mu.Lock()
	s.h.Record(d)
	s.mu.Unlock()
}

// drainInto adds the latencies recorded since the last drain to h, and
// starts afresh.
func (s *secondLatency) drainInto(h *latency.Histogram) {
	s.mu.Lock()
	h.Merge(&s.h)
	s.h = latency.Histogram{}
	s.mu.Unlock()
}

// quantiles formats a latency histogram as the "batch latency" lines give
// it: p50 D p99 D p99.9 D p99.99 D max D (N batches).
func quantiles(h *latency.Histogram) string {
	return fmt.Sprintf("p50 %v p99 %v p99.9 %v p99.99 %v max %v (%d batches)",
		h.Quantile(0.5), h.Quantile(0.99), h.Quantile(0.999), h.Quantile(0.9999), h.Max(), h.Count())
}

// measure runs the load for o.secs and prints the results.
func measure(ctx context.Context, cl batchClient, o *options, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(o.secs)*time.Second)
	defer cancel()
	var check *selfCheck
	if o.check {
		check = startCheck(cl, o, ctx.Done())
	}
	var done, failed atomic.Uint64
	var refused refusedOps
	// thisSecond[i] holds goroutine i's batches that ended since the last
	// per-second line, which prints their latency so that a run's tail
	// can be placed in time; all gathers the seconds, for the run's line.
	// warm[i] holds goroutine i's batches that started after the warm-up.
	thisSecond, warm := make([]secondLatency, o.numClients), make([]latency.Histogram, o.numClients)
	var all latency.Histogram
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	start, startProc := time.Now(), procstat.Read()
	warmEnd := start.Add(o.warmup)
	for i := range o.numClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gen, err := workload.New(workload.Config{Name: o.workload, Theta: o.theta, Records: o.records, Seed: o.seed + uint64(i)})
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
				return
			}
			values := make([]string, 64)
			for v := range values {
				values[v] = workload.Value(o.valueBytes, o.seed+uint64(i)<<8+uint64(v))
			}
			ops := make([]wire.Op, o.batchSize)
			results := make([]wire.Result, o.batchSize)
			// The batch's keys, formatted back to back. DoInto has encoded
			// the ops by the time it returns, so the next batch may reuse it.
			keyBuf := make([]byte, 0, 8*o.batchSize)
			for n := 0; ctx.Err() == nil; n++ {
				keyBuf = gen.NextBatch(ops, keyBuf, func(j int) string { return values[(n+j)&63] })
				t0 := time.Now()
				err := cl.DoInto(ctx, ops, results)
				if err != nil {
					if ctx.Err() != nil {
						return // the run ended while this batch was in flight
					}
					failed.Add(uint64(len(ops)))
					firstErr.CompareAndSwap(nil, &err)
					continue
				}
				took := time.Since(t0)
				notServed := refused.count(results)
				thisSecond[i].record(took)
				if t0.After(warmEnd) {
					warm[i].Record(took)
				}
				done.Add(uint64(len(ops) - notServed)) // refused ops are not throughput
			}
		}()
	}
	// Per-second progress: our own rate and resource use.
	tick := time.NewTicker(time.Second)
	last, lastProc, lastNet := uint64(0), procstat.Read(), cl.Traffic()
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
loop:
	for {
		select {
		case <-finished:
			break loop
		case <-tick.C:
			n, p, nt := done.Load(), procstat.Read(), cl.Traffic()
			secs := p.At.Sub(lastProc.At).Seconds()
			const mib = 1 << 20
			fmt.Fprintf(stdout, "client ops/s %.2f\nutil cpu%% %.1f rss_mib %.1f rx_mib/s %.2f tx_mib/s %.2f unix_ms %d\n",
				float64(n-last)/secs, procstat.CPUPercent(lastProc, p), float64(p.RSS)/mib,
				float64(nt.Received-lastNet.Received)/secs/mib, float64(nt.Sent-lastNet.Sent)/secs/mib, p.At.UnixMilli())
			// Printed also when no batch ended: "(0 batches)", with zeros,
			// is what a stalled second looks like.
			var h latency.Histogram
			for i := range thisSecond {
				thisSecond[i].drainInto(&h)
			}
			fmt.Fprintf(stdout, "client second_latency p50 %v p99 %v max %v (%d batches)\n",
				h.Quantile(0.5), h.Quantile(0.99), h.Max(), h.Count())
			all.Merge(&h)
			last, lastProc, lastNet = n, p, nt
		}
	}
	tick.Stop()
	elapsed := time.Since(start).Seconds()
	var steady latency.Histogram
	for i := range thisSecond {
		thisSecond[i].drainInto(&all) // the batches that ended after the last second's line
		steady.Merge(&warm[i])
	}
	proc := procstat.Read()
	fmt.Fprintf(stdout, "throughput %.0f ops/s\n", float64(done.Load())/elapsed)
	fmt.Fprintf(stdout, "batch latency %s\n", quantiles(&all))
	if steady.Count() > 0 {
		fmt.Fprintf(stdout, "after warm-up (batches started %v or more into the load): batch latency %s\n", o.warmup, quantiles(&steady))
	}
	cpuPerMops := 0.0
	if n := done.Load(); n > 0 {
		cpuPerMops = (proc.CPU - startProc.CPU).Seconds() / (float64(n) / 1e6)
	}
	fmt.Fprintf(stdout, "client cpu_s/Mops %.3f peak_rss_mib %.1f failed_ops %d refused_ops %d resent_ops %d\n", cpuPerMops, float64(proc.PeakRSS)/(1<<20), failed.Load(), refused.total(), cl.Traffic().Resent)
	if refused.total() > 0 {
		fmt.Fprintf(stdout, "refused ops by status: %s\n", refused.String())
	}
	var checkErr error
	if check != nil {
		checkErr = check.finish(stdout)
	}
	if e := firstErr.Load(); e != nil {
		return errors.Join(fmt.Errorf("%d ops failed; first error: %w", failed.Load(), *e), checkErr)
	}
	return checkErr
}
