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
