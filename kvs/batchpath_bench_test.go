package kvs_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/wire"
	"github.com/batchkv/batchkv/workload"
)

// BenchmarkBatchPath is the whole path in one process: a client sending
// 8192-op YCSB-B batches from 16 goroutines over loopback TCP to a server
// holding 1,000,000 keys, through the binary codec and net/rpc. An
// iteration is one batch; ns/kvop is wall time per op with client and
// server sharing GOMAXPROCS cores.
func BenchmarkBatchPath(b *testing.B) {
	const (
		records    = workload.DefaultRecords
		batchOps   = 8192
		goroutines = 16
	)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv, err := kvs.New(kvs.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	cl, err := client.New(client.Config{Servers: []string{ln.Addr().String()}})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	keys := workload.Keys(records)
	value := workload.Value(workload.DefaultValueBytes, 1)
	for from := 0; from < len(keys); from += batchOps {
		ops := make([]wire.Op, 0, batchOps)
		for _, k := range keys[from:min(from+batchOps, len(keys))] {
			ops = append(ops, wire.Op{Code: wire.OpPut, Key: k, Value: value})
		}
		if _, err := cl.Do(ctx, ops); err != nil {
			b.Fatal(err)
		}
	}

	var next atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gen, err := workload.New(workload.Config{Name: "YCSB-B", Theta: workload.DefaultTheta, Records: records, Seed: uint64(g + 1)})
			if err != nil {
				panic(err)
			}
			ops := make([]wire.Op, batchOps)
			results := make([]wire.Result, batchOps)
			keyBuf := make([]byte, 0, 8*batchOps)
			for next.Add(1) <= int64(b.N) {
				keyBuf = gen.NextBatch(ops, keyBuf, func(int) string { return value })
				if err := cl.DoInto(ctx, ops, results); err != nil {
					panic(err)
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batchOps), "ns/kvop")
}
