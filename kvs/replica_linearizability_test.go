package kvs_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/clustertest"
	"github.com/batchkv/batchkv/internal/linz"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// TestReplicatedLinearizableUnderFaults: clients run small batches over a
// few hot keys on 3 servers (RF=3, 3 shards) while, in turn, a shard's
// leader is stopped and restarted, a follower is stopped and restarted,
// and a leader is cut off from its peers' Raft traffic and healed. Writes
// whose outcome the client could not learn count as possibly applied.
// The history must be linearizable per key. Every connection, Raft and
// client alike, is mutual TLS.
func TestReplicatedLinearizableUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("fault schedule takes about 20s")
	}
	c := newReplCluster(t, 3, 3, 3, clustertest.WithTLS())
	for sh := range 3 {
		c.WaitLeader(sh, -1)
	}
	h := linz.NewHistory()
	var stop atomic.Bool
	var wg sync.WaitGroup
	var okOps, failedOps atomic.Int64
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	keys := keyNames(6)
	for id := range 8 {
		cl := c.Client(t, func(cfg *client.Config) { cfg.AttemptTimeout = time.Second })
		rng := rand.New(rand.NewPCG(seed, uint64(id)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := 0; !stop.Load(); b++ {
				ops := linz.RandomBatch(rng, id, b, keys, 3)
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				call := h.Now()
				res, err := cl.Do(ctx, ops)
				ret := h.Now()
				cancel()
				if err != nil {
					failedOps.Add(int64(len(ops)))
				} else {
					okOps.Add(int64(len(ops)))
				}
				h.Record(id, ops, res, err, call, ret)
			}
		}()
	}
	pause := func() { time.Sleep(1500 * time.Millisecond) }
	pause()
	// 1. Stop the leader of shard 0, then start it again.
	l := c.WaitLeader(0, -1)
	t.Logf("stopping server %d, leader of shard 0", l)
	c.Stop(l)
	c.WaitLeader(0, l)
	pause()
	c.Start(l)
	pause()
	// 2. Stop a follower of shard 1, then start it again.
	f := (c.WaitLeader(1, -1) + 1) % 3
	t.Logf("stopping server %d, a follower of shard 1", f)
	c.Stop(f)
	pause()
	c.Start(f)
	pause()
	// 3. Cut the leader of shard 2 off from its peers, then heal.
	l = c.WaitLeader(2, -1)
	t.Logf("isolating server %d, leader of shard 2", l)
	c.Isolate(l, true)
	pause()
	pause()
	c.Isolate(l, false)
	pause()
	stop.Store(true)
	wg.Wait()
	t.Logf("%d ops answered, %d in failed batches, %d in the history", okOps.Load(), failedOps.Load(), len(h.Ops()))
	require.Greater(t, okOps.Load(), int64(500), "too few ops got through to test anything")
	require.Equal(t, porcupine.Ok, check(t, h.Ops()))
}

// staleReadCluster starts the cluster of the stale-read scenarios (the
// stale-read bug planted or not) and returns it with 4 keys of one shard
// whose preferred leader is server 0, and that shard, once it has a leader.
func staleReadCluster(t *testing.T, plant bool) (c *replCluster, keys []string, sh int) {
	c = newReplCluster(t, 3, 3, 3, plantStaleReads(plant))
	layout, err := shard.New(c.Addrs(), 3, 3, 0)
	require.NoError(t, err)
	for i := 0; len(keys) < 4; i++ {
		if k := fmt.Sprintf("key%d", i); layout.Preferred(layout.Shard(k)) == 0 {
			keys = append(keys, k)
		}
	}
	sh = layout.Shard(keys[0])
	c.WaitLeader(sh, -1)
	return c, keys, sh
}

// staleReadScenario writes keys through the leaders while server x, the
// preferred leader of the keys' shard, is cut off from Raft, then reads
// them with fresh clients, which ask x first. It returns the history.
func staleReadScenario(t *testing.T, plant bool) []porcupine.Operation {
	c, keys, sh := staleReadCluster(t, plant)
	const x = 0 // the keys' preferred leader (staleReadCluster)
	h := linz.NewHistory()
	do := func(id int, op wire.Op) {
		cl := c.Client(t, func(cfg *client.Config) { cfg.AttemptTimeout = time.Second })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		call := h.Now()
		res, err := cl.Do(ctx, []wire.Op{op})
		h.Record(id, []wire.Op{op}, res, err, call, h.Now())
	}
	for i, k := range keys {
		do(i, wire.Op{Code: wire.OpPut, Key: k, Value: "old"})
	}
	c.Isolate(x, true)
	c.WaitLeader(sh, x)
	for i, k := range keys {
		do(i, wire.Op{Code: wire.OpPut, Key: k, Value: "new"})
		do(i, wire.Op{Code: wire.OpGet, Key: k})
	}
	return h.Ops()
}

// TestReplicatedCheckerCatchesStaleReads: the planted bug (every replica
// serves gets from its own memory, with no read barrier) lets the cut-off
// replica answer old values after new ones were acknowledged, and the
// checker must say so. The same scenario on the real code is linearizable.
func TestReplicatedCheckerCatchesStaleReads(t *testing.T) {
	if testing.Short() {
		t.Skip("needs elections")
	}
	t.Run("real", func(t *testing.T) {
		require.Equal(t, porcupine.Ok, check(t, staleReadScenario(t, false)))
	})
	t.Run("planted", func(t *testing.T) {
		require.Equal(t, porcupine.Illegal, check(t, staleReadScenario(t, true)))
	})
}
