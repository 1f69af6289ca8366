package store

import (
	"hash/maphash"
	"sync"

	"github.com/batchkv/batchkv/wire"
)

// Batcher is a Store that can apply a whole batch in one call, faster
// than op by op. The service uses it when the store has it.
type Batcher interface {
	Store
	// ApplyBatchAt applies the ops whose indexes at lists (all of them for
	// a nil at; none for an empty one), every one of which has passed
	// wire.Op.Check, and writes op i's result to results[i]; the other ops
	// and results are left alone. Ops on one key take effect in the order
	// at lists them; ops on different keys in any order. The values read
	// are copied into vals, which the results' values then alias. A get
	// whose value vals refuses (over its Limit) answers
	// wire.StatusTooLarge instead, as does a conditional put, which is then
	// not applied (see Store.PutIf).
	ApplyBatchAt(ops []wire.Op, at []int32, results []wire.Result, vals *Values)
}

// lookahead is how many ops of one shard ApplyBatchAt starts fetching
// from memory before it works on the first of them.
const lookahead = 8

// batchScratch holds ApplyBatchAt's per-call hash and index arrays.
type batchScratch struct {
	hash  []uint64
	order []int32
}

var batchScratchPool = sync.Pool{New: func() any { return new(batchScratch) }}

// ApplyBatch is ApplyBatchAt of every op.
func (s *Arena) ApplyBatch(ops []wire.Op, results []wire.Result, vals *Values) {
	s.ApplyBatchAt(ops, nil, results, vals)
}

// ApplyBatchAt implements Batcher.
//
// A lookup over millions of keys is two cache misses (its slot, then its
// record), and done one op at a time they are paid one after the other: a
// lock's atomic instruction between ops keeps the processor from starting
// the next op's loads early. So ApplyBatchAt sorts the ops by shard (stably,
// which keeps each key's ops in order), takes each shard's lock once for
// all of its ops, and walks them in groups: first it touches the slots and
// records of a group, so that their misses overlap, then it applies the
// group's ops, whose data is by then in the cache.
func (s *Arena) ApplyBatchAt(ops []wire.Op, at []int32, results []wire.Result, vals *Values) {
	n := len(ops)
	if at != nil {
		n = len(at)
	}
	if n <= fewOps {
		s.applyFew(ops, at, results, vals)
		return
	}
	sc := batchScratchPool.Get().(*batchScratch)
	defer batchScratchPool.Put(sc)
	// hashes is indexed by op index, order holds op indexes.
	if cap(sc.hash) < len(ops) {
		sc.hash = make([]uint64, len(ops))
	}
	if cap(sc.order) < n {
		sc.order = make([]int32, n)
	}
	hashes, order := sc.hash[:len(ops)], sc.order[:n]

	// Counting sort by shard. start[sh] ends up as the first position of
	// shard sh's ops in order.
	var start [arenaShards + 1]int32
	var writes [arenaShards]bool
	for i := range Selected(len(ops), at) {
		h := maphash.String(s.seed, ops[i].Key)
		hashes[i] = h
		sh := h >> (64 - arenaShardBits)
		start[sh+1]++
		if ops[i].Code != wire.OpGet {
			writes[sh] = true
		}
	}
	for sh := 1; sh <= arenaShards; sh++ {
		start[sh] += start[sh-1]
	}
	next := start
	for i := range Selected(len(ops), at) {
		sh := hashes[i] >> (64 - arenaShardBits)
		order[next[sh]] = int32(i)
		next[sh]++
	}

	var sink byte
	for sh := range arenaShards {
		group := order[start[sh]:start[sh+1]]
		if len(group) == 0 {
			continue
		}
		shard := &s.shards[sh]
		if writes[sh] {
			shard.mu.Lock()
		} else {
			shard.mu.RLock()
		}
		for len(group) > 0 {
			n := min(lookahead, len(group))
			sink ^= shard.touch(group[:n], hashes)
			for _, i := range group[:n] {
				shard.apply(&ops[i], &results[i], hashes[i], vals)
			}
			group = group[n:]
		}
		if writes[sh] {
			shard.mu.Unlock()
		} else {
			shard.mu.RUnlock()
		}
	}
	s.sink.Store(uint32(sink))
}

// fewOps is the most ops ApplyBatchAt applies one by one, each under its
// shard's lock: for a lone op, sorting by shard (which walks every shard)
// costs more than it saves. As in the sorted path, a batch's ops apply in
// order but not as one: another batch's may come between two of them.
const fewOps = 4

// applyFew applies the ops at selects one by one, in order.
func (s *Arena) applyFew(ops []wire.Op, at []int32, results []wire.Result, vals *Values) {
	for i := range Selected(len(ops), at) {
		h := maphash.String(s.seed, ops[i].Key)
		shard := &s.shards[h>>(64-arenaShardBits)]
		if ops[i].Code == wire.OpGet {
			shard.mu.RLock()
			shard.apply(&ops[i], &results[i], h, vals)
			shard.mu.RUnlock()
		} else {
			shard.mu.Lock()
			shard.apply(&ops[i], &results[i], h, vals)
			shard.mu.Unlock()
		}
	}
}

// touch loads the home slot of each op and, where the slot's tag matches,
// the first byte of its record, and returns them folded together so that
// the loads cannot be left out. The loads are independent of each other,
// so their cache misses overlap.
func (sh *arenaShard) touch(group []int32, hashes []uint64) byte {
	mask := uint64(len(sh.slots) - 1)
	var x byte
	for _, i := range group {
		h := hashes[i]
		slot := sh.slots[h&mask]
		if slot != 0 && slot != tombstone && slot>>tagShift == tagOf(h) {
			x ^= sh.rec.at(refOf(slot))[0]
		}
	}
	return x
}

// apply applies one op; the caller holds the shard's lock, exclusively if
// the op writes.
func (sh *arenaShard) apply(op *wire.Op, res *wire.Result, h uint64, vals *Values) {
	switch op.Code {
	case wire.OpGet:
		i, found := sh.find(op.Key, h)
		if !found {
			*res = wire.Result{Status: wire.StatusNotFound}
			return
		}
		v, ok := vals.Add(sh.rec.value(refOf(sh.slots[i])))
		if !ok {
			*res = wire.Result{Status: wire.StatusTooLarge}
			return
		}
		*res = wire.Result{Status: wire.StatusOK, Value: v}
	case wire.OpPut:
		sh.put(op.Key, op.Value, h)
		*res = wire.Result{Status: wire.StatusOK}
	case wire.OpDelete:
		sh.delete(op.Key, h)
		*res = wire.Result{Status: wire.StatusOK}
	case wire.OpPutIf:
		*res = sh.putIf(op, h, vals)
	}
}
