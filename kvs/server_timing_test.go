package kvs

// Benchmarks of the server's side alone, on one goroutine: the work of one
// batch from request bytes to reply bytes, over a store of the standard
// run's 1,000,000 keys (the stores alone: kvs/store). Run with -cpu 1 for what one core can do, and
// compare commits with benchstat:
//
//	go test -run XXX -bench . -cpu 1 -count 10 ./kvs/ > new.txt
//
// Each reports ns/op per benchmark iteration and, for batches, ns/kvop
// per op within the batch.

import (
	"runtime"
	"testing"

	"github.com/batchkv/batchkv/kvs/backend"
	"github.com/batchkv/batchkv/kvs/stats"
	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
	"github.com/batchkv/batchkv/workload"
)

const (
	benchRecords    = workload.DefaultRecords
	benchValueBytes = workload.DefaultValueBytes
	benchBatchOps   = 8192
)

// loadedStore returns a store of the given kind holding every key of the
// standard run.
func loadedStore(b *testing.B, kind string) store.Store {
	runtime.GC()
	s, ok := store.New(kind)
	if !ok {
		b.Fatalf("no store %q", kind)
	}
	value := workload.Value(benchValueBytes, 1)
	for _, k := range workload.Keys(benchRecords) {
		s.Put(k, value)
	}
	return s
}

// ycsbBatches returns encoded BatchOp request bodies of YCSB-B's mix (95%
// gets) over keys drawn uniformly over the records: harder on the cache
// than the standard run's Zipfian keys, so this bounds the cost from above.
func ycsbBatches(b *testing.B, n int) [][]byte {
	gen, err := workload.New(workload.Config{Name: "YCSB-B", Theta: 0, Records: benchRecords, Seed: 3})
	if err != nil {
		b.Fatal(err)
	}
	value := workload.Value(benchValueBytes, 3)
	bodies := make([][]byte, n)
	args := wire.BatchArgs{Ops: make([]wire.Op, benchBatchOps)}
	var keys []byte
	for i := range bodies {
		keys = gen.NextBatch(args.Ops, keys, func(int) string { return value })
		bodies[i] = wire.AppendBatchArgs(nil, &args)
	}
	return bodies
}

// BenchmarkServerBatch is the server's CPU work for one 8192-op YCSB-B-mix
// batch, without the network: decode the request body, apply it to a
// store of 1,000,000 keys, encode the reply.
func BenchmarkServerBatch(b *testing.B) {
	variants := []struct {
		name, store string
		each        bool // hide store.Batcher: apply op by op
	}{
		{"syncmap", "syncmap", true},
		{"arena-each", "arena", true},
		{"arena", "arena", false},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			var st store.Store = loadedStore(b, v.store)
			if v.each {
				st = struct{ store.Store }{st}
			}
			st0 := &stats.Stats{}
			svc := &Service{backend: backend.NewLocal(st, backend.NewApplier(st0, nil)), stats: st0}
			bodies := ycsbBatches(b, 64)
			var args wire.BatchArgs
			var out []byte
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := wire.DecodeBatchArgs(bodies[i%len(bodies)], &args); err != nil {
					b.Fatal(err)
				}
				var reply wire.BatchReply
				if err := svc.BatchOp(&args, &reply); err != nil || reply.Status != wire.StatusOK {
					b.Fatal(err, reply.Status)
				}
				out = wire.AppendBatchReply(out[:0], &reply)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchBatchOps), "ns/kvop")
		})
	}
}

// BenchmarkClientBatch is the load generator's and the client's CPU work
// for one 8192-op YCSB-B batch, without the network, as kvsclient does it:
// draw the ops, format their keys, encode the request, decode a reply of
// the size the server sends, and copy the results out.
func BenchmarkClientBatch(b *testing.B) {
	gen, err := workload.New(workload.Config{Name: "YCSB-B", Theta: workload.DefaultTheta, Records: benchRecords, Seed: 5})
	if err != nil {
		b.Fatal(err)
	}
	value := workload.Value(benchValueBytes, 5)
	reply := wire.BatchReply{Results: make([]wire.Result, benchBatchOps)}
	for i := range reply.Results {
		reply.Results[i] = wire.Result{Value: value}
	}
	replyBody := wire.AppendBatchReply(nil, &reply)

	ops := make([]wire.Op, benchBatchOps)
	results := make([]wire.Result, benchBatchOps)
	keyBuf := make([]byte, 0, 8*benchBatchOps)
	var out []byte
	var got wire.BatchReply
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		keyBuf = gen.NextBatch(ops, keyBuf, func(int) string { return value })
		out = wire.AppendBatchArgs(out[:0], &wire.BatchArgs{RingID: 1, Ops: ops})
		if err := wire.DecodeBatchReply(replyBody, &got); err != nil {
			b.Fatal(err)
		}
		copy(results, got.Results)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchBatchOps), "ns/kvop")
}
