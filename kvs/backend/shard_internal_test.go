package backend

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/kvs/stats"
	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
	"github.com/batchkv/batchkv/workload"
)

// naivePlan is planShard's contract, written the obvious way: each valid
// get is a free read when the batch never writes its key, reads the last
// earlier write of its key when there is one, and otherwise rides in the
// entry, one riding get per key, placed just before the key's first write;
// but every get of a key the batch writes conditionally goes into the
// entry at its own place.
type naivePlan struct {
	entryAt        []int       // index in ops of each entry op, in order
	readAt         []int32     // free gets
	riding, shadow map[int]int // get index -> entry index / write index
}

func planNaively(ops []wire.Op) naivePlan {
	p := naivePlan{riding: map[int]int{}, shadow: map[int]int{}}
	writes := func(i int) bool { return ops[i].Code != wire.OpGet && ops[i].Check() == wire.StatusOK }
	writtenLater := func(key string, after int) bool {
		for j := after + 1; j < len(ops); j++ {
			if writes(j) && ops[j].Key == key {
				return true
			}
		}
		return false
	}
	condKey := func(key string) bool {
		for j := range ops {
			if writes(j) && ops[j].Code == wire.OpPutIf && ops[j].Key == key {
				return true
			}
		}
		return false
	}
	rider := map[string]int{} // key -> entry index of its riding get
	for i := range ops {
		if ops[i].Check() != wire.StatusOK {
			continue
		}
		if writes(i) {
			p.entryAt = append(p.entryAt, i)
			continue
		}
		if condKey(ops[i].Key) {
			p.riding[i] = len(p.entryAt)
			p.entryAt = append(p.entryAt, i)
			continue
		}
		last := -1
		for j := i - 1; j >= 0; j-- {
			if writes(j) && ops[j].Key == ops[i].Key {
				last = j
				break
			}
		}
		switch {
		case last >= 0:
			p.shadow[i] = last
		case writtenLater(ops[i].Key, i):
			r, ok := rider[ops[i].Key]
			if !ok {
				r = len(p.entryAt)
				rider[ops[i].Key] = r
				p.entryAt = append(p.entryAt, i)
			}
			p.riding[i] = r
		default:
			p.readAt = append(p.readAt, int32(i))
		}
	}
	return p
}

// randomBatch returns n ops over keys k0..k(keys-1): gets, puts, deletes,
// conditional puts and, now and then, an op that fails Check.
func randomBatch(rng *rand.Rand, n, keys int) []wire.Op {
	ops := make([]wire.Op, n)
	for i := range ops {
		key := fmt.Sprintf("k%d", rng.IntN(keys))
		switch r := rng.IntN(21); {
		case r < 12:
			ops[i] = wire.Op{Code: wire.OpGet, Key: key}
		case r == 20:
			ops[i] = wire.Op{Code: wire.OpPutIf, Cond: wire.CondEqual, Key: key, Expect: "1", Value: fmt.Sprint(i)}
		case r < 17:
			ops[i] = wire.Op{Code: wire.OpPut, Key: key, Value: fmt.Sprint(i)}
		case r < 19:
			ops[i] = wire.Op{Code: wire.OpDelete, Key: key}
		default:
			ops[i] = wire.Op{Code: wire.OpPut, Key: ""} // fails Check
		}
	}
	return ops
}

// diffPlan returns how plan got differs from the naive plan of ops, or
// nil. results are what planShard wrote for ops.
func diffPlan(ops []wire.Op, results []wire.Result, got *shardPlan) error {
	want := planNaively(ops)
	if !slices.Equal(want.entryAt, got.writeAt) || len(got.entry) != len(got.writeAt) {
		return fmt.Errorf("entry ops at %v, want %v", got.writeAt, want.entryAt)
	}
	for j, i := range got.writeAt {
		if got.entry[j] != ops[i] {
			return fmt.Errorf("entry op %d is %+v, want op %d %+v", j, got.entry[j], i, ops[i])
		}
	}
	if !slices.Equal(want.readAt, got.readAt) {
		return fmt.Errorf("free gets at %v, want %v", got.readAt, want.readAt)
	}
	asMap := func(links []link) map[int]int {
		m := map[int]int{}
		for _, l := range links {
			m[l.at] = l.from
		}
		return m
	}
	if r := asMap(got.riding); !maps.Equal(want.riding, r) || len(r) != len(got.riding) {
		return fmt.Errorf("riding gets %v, want %v", got.riding, want.riding)
	}
	if s := asMap(got.shadow); !maps.Equal(want.shadow, s) || len(s) != len(got.shadow) {
		return fmt.Errorf("gets after a write %v, want %v", got.shadow, want.shadow)
	}
	var rejected uint64
	for i := range ops {
		if st := ops[i].Check(); st != wire.StatusOK {
			rejected++
			if results[i].Status != st {
				return fmt.Errorf("op %d answered %v, want %v", i, results[i].Status, st)
			}
		}
	}
	if rejected != got.rejected {
		return fmt.Errorf("%d rejected, want %d", got.rejected, rejected)
	}
	return nil
}

// TestPlanShardMatchesNaivePlan: planShard sorts random batches (few keys,
// so that keys repeat; many keys, so that the write set's filter mostly
// turns gets away) exactly as the obvious quadratic plan does, and the
// comparison catches plans planted wrong.
func TestPlanShardMatchesNaivePlan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var shadowed, rode, condRode int
	for round := range 600 {
		keys := []int{3, 20, 5000}[round%3]
		ops := randomBatch(rng, 1+rng.IntN(300), keys)
		results := make([]wire.Result, len(ops))
		p := planShard(ops, results)
		require.NoError(t, diffPlan(ops, results, p), "round %d", round)
		shadowed += len(p.shadow)
		rode += len(p.riding)
		for _, l := range p.riding {
			if l.from > 0 && p.entry[l.from-1].Code == wire.OpPutIf && p.entry[l.from-1].Key == ops[l.at].Key {
				condRode++ // a get right after a conditional put of its key
			}
		}

		// Planted: a get after a write of its key read from the store.
		if len(p.shadow) > 0 {
			bad := *p
			l := bad.shadow[0]
			bad.shadow = bad.shadow[1:]
			bad.readAt = append(slices.Clone(bad.readAt), int32(l.at))
			require.Error(t, diffPlan(ops, results, &bad), "round %d: a shadowed get read from the store", round)
		}
		// Planted: a riding get pointed at the wrong entry op.
		if len(p.riding) > 0 && len(p.entry) > 1 {
			bad := *p
			bad.riding = slices.Clone(bad.riding)
			bad.riding[0].from = (bad.riding[0].from + 1) % len(bad.entry)
			require.Error(t, diffPlan(ops, results, &bad), "round %d: a riding get reads another op", round)
		}
	}
	require.Greater(t, shadowed, 100, "the batches exercise gets after writes")
	require.Greater(t, rode, 100, "and gets that ride on the entry")
	require.Greater(t, condRode, 20, "and gets that read what a conditional put left")
}

// TestWriteSetFilterCollisions: keys that collide in the filter are told
// apart by the map, and a key a batch writes is always found.
func TestWriteSetFilterCollisions(t *testing.T) {
	var s writeSet
	written := map[string]bool{}
	for i := range 2000 { // far more than filterBits/2: most bits are set
		k := fmt.Sprintf("w%d", i)
		s.add(k, false)
		written[k] = true
	}
	s.add("w1", false) // a second write of a key: one more write, no new key
	require.Equal(t, 2001, s.writes)
	require.Len(t, s.keys, 2000)
	passed := 0
	for i := range 20000 {
		k := fmt.Sprintf("r%d", i)
		if w, b := filterBit(k); s.filter[w]&b != 0 {
			passed++
		}
		require.Nil(t, s.find(k), "a key the batch does not write")
	}
	require.Greater(t, passed, 1000, "the filter passed many unwritten keys, so the map was tested")
	for k := range written {
		w := s.find(k)
		require.NotNil(t, w, k)
		require.Equal(t, writtenKey{last: -1, rider: -1}, *w)
	}
	var empty writeSet
	require.Nil(t, empty.find("w1"))
}

// BenchmarkPlanShard plans one shard's third of a standard 8192-op YCSB-B
// batch (95% gets, Zipfian keys).
func BenchmarkPlanShard(b *testing.B) {
	gen, err := workload.New(workload.Config{Name: "YCSB-B", Theta: workload.DefaultTheta, Records: workload.DefaultRecords, Seed: 1})
	require.NoError(b, err)
	value := workload.Value(workload.DefaultValueBytes, 1)
	batches := make([][]wire.Op, 64)
	for i := range batches {
		batches[i] = make([]wire.Op, 8192/3)
		gen.NextBatch(batches[i], nil, func(int) string { return value })
	}
	results := make([]wire.Result, 8192/3)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		planShard(batches[i%len(batches)], results)
	}
}

// BenchmarkServeShardReads plans one shard's third of a standard 8192-op
// YCSB-B batch and reads its free gets from a store of 1,000,000 keys, as
// a replicated shard's leader does once the batch's entry is applied.
func BenchmarkServeShardReads(b *testing.B) {
	gen, err := workload.New(workload.Config{Name: "YCSB-B", Theta: workload.DefaultTheta, Records: workload.DefaultRecords, Seed: 1})
	require.NoError(b, err)
	value := workload.Value(workload.DefaultValueBytes, 1)
	st := store.NewArena()
	for _, k := range workload.Keys(workload.DefaultRecords) {
		st.Put(k, value)
	}
	batches := make([][]wire.Op, 64)
	for i := range batches {
		batches[i] = make([]wire.Op, 8192/3)
		gen.NextBatch(batches[i], nil, func(int) string { return value })
	}
	be := &Replicated{apply: NewApplier(&stats.Stats{}, nil)}
	results := make([]wire.Result, 8192/3)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		ops := batches[i%len(batches)]
		be.serveReads(st, ops, planShard(ops, results), results, nil)
	}
}
