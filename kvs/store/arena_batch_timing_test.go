package store_test

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
)

// BenchmarkArenaSmallBatch applies batches of 140 puts of 128-byte values
// to random keys of an arena of 333,334 keys: a replicated shard's log
// entry under the standard load (a third of 1M keys per shard, 5% of a
// third of an 8,192-op batch). ns/op is per put.
func BenchmarkArenaSmallBatch(b *testing.B) {
	const keys, batch = 333_334, 140
	s := store.NewArena()
	value := string(make([]byte, 128))
	for k := range keys {
		s.Put(strconv.Itoa(k), value)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	batches := make([][]wire.Op, 4096)
	for j := range batches {
		batches[j] = make([]wire.Op, batch)
		for i := range batches[j] {
			batches[j][i] = wire.Op{Code: wire.OpPut, Key: strconv.Itoa(rng.IntN(keys)), Value: value}
		}
	}
	results := make([]wire.Result, batch)
	b.ResetTimer()
	for j := 0; j*batch < b.N; j++ {
		s.ApplyBatch(batches[j%len(batches)], results, &store.Values{})
	}
}

// BenchmarkArenaLoneOp applies batches of one get or one put of a 128-byte
// value to random keys of an arena of 100,000 keys: a lone op's batch.
func BenchmarkArenaLoneOp(b *testing.B) {
	const keys = 100_000
	s := store.NewArena()
	value := string(make([]byte, 128))
	for k := range keys {
		s.Put(strconv.Itoa(k), value)
	}
	for _, code := range []wire.OpCode{wire.OpGet, wire.OpPut} {
		b.Run(code.String(), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 1))
			ops := make([]wire.Op, 4096)
			for i := range ops {
				ops[i] = wire.Op{Code: code, Key: strconv.Itoa(rng.IntN(keys))}
				if code == wire.OpPut {
					ops[i].Value = value
				}
			}
			results := make([]wire.Result, 1)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s.ApplyBatch(ops[i%len(ops):i%len(ops)+1], results, &store.Values{Limit: 1 << 20})
				if results[0].Status != wire.StatusOK {
					b.Fatalf("%s: status %s", code, results[0].Status)
				}
			}
		})
	}
}
