package kvs_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/internal/clustertest"
	"github.com/batchkv/batchkv/internal/linz"
	"github.com/batchkv/batchkv/internal/planted"
	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
)

type linWorkload struct {
	servers      int
	clients      int // half route with the full ring, half know one server
	keys         int
	batches      int // per client
	maxBatchOps  int
	store        string
	wrap         func(store.Store) store.Store
	cas          bool // batches with conditional puts (linz.CASBatch)
	seed         uint64
	failedOps    atomic.Int64
	appliedCount atomic.Int64
}

// run drives the workload against a fresh cluster and returns its history.
func (w *linWorkload) run(t *testing.T) []porcupine.Operation {
	t.Helper()
	t.Logf("seed %d", w.seed)
	c := newTestCluster(t, w.servers, clusterOptions{store: w.store, wrap: w.wrap})
	h := linz.NewHistory()
	keys := keyNames(w.keys)
	var wg sync.WaitGroup
	for id := range w.clients {
		cl := c.client(t)
		if id%2 == 1 {
			cl = c.client(t, c.addrs[id%len(c.addrs)])
		}
		rng := rand.New(rand.NewPCG(w.seed, uint64(id)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := map[string]string{}
			for b := range w.batches {
				var ops []wire.Op
				if w.cas {
					ops = linz.CASBatch(rng, id, b, keys, w.maxBatchOps, seen)
				} else {
					ops = linz.RandomBatch(rng, id, b, keys, w.maxBatchOps)
				}
				call := h.Now()
				res, err := cl.Do(t.Context(), ops)
				ret := h.Now()
				linz.Observe(seen, ops, res)
				if err != nil {
					w.failedOps.Add(int64(len(ops)))
				}
				w.appliedCount.Add(int64(len(ops)))
				h.Record(id, ops, res, err, call, ret)
			}
		}()
	}
	wg.Wait()
	return h.Ops()
}

// keyNames returns key0..key{n-1}.
func keyNames(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("key%d", i)
	}
	return keys
}

// check runs porcupine over a history; on a violation it writes the
// visualization and logs its path.
func check(t *testing.T, ops []porcupine.Operation) porcupine.CheckResult {
	t.Helper()
	return clustertest.Linearizable(t, ops)
}

func newLinWorkload() *linWorkload {
	return &linWorkload{servers: 3, clients: 10, keys: 6, batches: 300, maxBatchOps: 4, seed: uint64(time.Now().UnixNano())}
}

// TestLinearizable: 10 clients, half routing themselves and half sending
// through one server that forwards, run batches of gets, puts and deletes
// over 6 hot keys on 3 servers; the history must be linearizable per key.
// It runs once per Store implementation.
func TestLinearizable(t *testing.T) {
	for _, store := range store.Kinds {
		t.Run(store, func(t *testing.T) {
			w := newLinWorkload()
			w.store = store
			ops := w.run(t)
			require.Zero(t, w.failedOps.Load(), "no faults were injected, so no op may fail")
			require.Greater(t, len(ops), 2000)
			require.Equal(t, porcupine.Ok, check(t, ops))
		})
	}
}

// TestCheckerCatchesPlantedBugs: the same workload against stores with a
// stale read or a lost write must fail the check, or the check proves
// nothing.
func TestCheckerCatchesPlantedBugs(t *testing.T) {
	bugs := map[string]func(store.Store) store.Store{
		"stale read": func(s store.Store) store.Store { return planted.StaleReads(s, 1) },
		"lost write": planted.LostWrites,
	}
	for name, wrap := range bugs {
		t.Run(name, func(t *testing.T) {
			w := newLinWorkload()
			w.wrap = wrap
			require.Equal(t, porcupine.Illegal, check(t, w.run(t)))
		})
	}
}
