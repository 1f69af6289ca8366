// Package planted holds deliberate bugs for the checkers' own tests: a
// checker that passes a history made by one of these stores proves
// nothing. Nothing outside tests uses them.
package planted

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/batchkv/batchkv/kvs/store"
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
