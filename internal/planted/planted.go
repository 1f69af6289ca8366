// Package planted holds deliberate bugs for the checkers' own tests: a
// checker that passes a history made by one of these stores proves
// nothing. Nothing outside tests uses them (the service calls
// DecideBeforeLog only when a test planted it).
package planted

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
)

// StaleReads returns s with a stale-read bug: after a put, one get in
// four (chosen by a generator seeded with seed) serves the value the key
// had before that put.
func StaleReads(s store.Store, seed uint64) store.Store {
	return &staleStore{Store: s, prev: map[string]string{}, rng: rand.New(rand.NewPCG(seed, seed))}
}

type staleStore struct {
	store.Store
	mu   sync.Mutex
	prev map[string]string // guarded by mu
	rng  *rand.Rand        // guarded by mu
}

func (s *staleStore) Put(key, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := store.Get(s.Store, key); ok {
		s.prev[key] = old
	}
	s.Store.Put(key, value)
}

func (s *staleStore) AppendGet(dst []byte, key string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.prev[key]; ok && s.rng.IntN(4) == 0 {
		return append(dst, old...), true
	}
	return s.Store.AppendGet(dst, key)
}

// LostWrites returns s with a lost-write bug: every fifth put is
// acknowledged and not applied.
func LostWrites(s store.Store) store.Store { return &lossyStore{Store: s} }

type lossyStore struct {
	store.Store
	puts atomic.Int64
}

func (s *lossyStore) Put(key, value string) {
	if s.puts.Add(1)%5 == 0 {
		return
	}
	s.Store.Put(key, value)
}

// DecideBeforeLog plants the bug "a conditional put decided on the leader
// before the log": it decides each wire.OpPutIf of entry, a replicated
// batch's log entry, on st, the leader's store as it is now, and rewrites
// the entry to what it decided, a plain put where the condition held and
// a get of the key where it did not, so the state machine applies the
// leader's decisions instead of making its own. It returns the answers
// it decided, by entry index. Two batches in flight on one key are then
// both decided on the state before either, and a leader's store may lag
// the log it has not applied yet: a compare-and-set can succeed twice
// from one value.
func DecideBeforeLog(st store.Store, entry []wire.Op) map[int]wire.Result {
	decided := map[int]wire.Result{}
	for j := range entry {
		op := &entry[j]
		if op.Code != wire.OpPutIf {
			continue
		}
		cur, found := store.Get(st, op.Key)
		res := wire.Result{Status: op.Decide(cur, found), Value: cur}
		decided[j] = res
		if res.Status.Applied() {
			*op = wire.Op{Code: wire.OpPut, Key: op.Key, Value: op.Value}
		} else {
			*op = wire.Op{Code: wire.OpGet, Key: op.Key}
		}
	}
	return decided
}

// RacyPutIf returns s with a non-atomic conditional put: it reads the key,
// yields, decides, and then writes, so another write can land between the
// read and the write.
func RacyPutIf(s store.Store) store.Store { return &racyStore{Store: s} }

type racyStore struct{ store.Store }

func (s *racyStore) PutIf(op *wire.Op, vals *store.Values) wire.Result {
	cur, found := store.Get(s.Store, op.Key)
	runtime.Gosched()
	res := wire.Result{Status: op.Decide(cur, found)}
	if found {
		res.Value, _ = vals.Add([]byte(cur))
	}
	if res.Status.Applied() {
		s.Store.Put(op.Key, op.Value)
	}
	return res
}
