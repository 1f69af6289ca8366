package kvs_test

import (
	"context"
	"fmt"
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

// The membership integration tests live in membership/cluster_test.go;
// the one here plants kvs.SetServeByMapForTest, which only kvs's tests
// can reach.

// membershipCluster is 4 servers, RF=3 and 6 shards, of which the first
// 3 start as members and the 4th joins as a spare.
func membershipCluster(t *testing.T, opts ...clustertest.Option) *replCluster {
	return membershipClusterRF(t, 3, opts...)
}

// membershipClusterRF is membershipCluster at replication factor rf.
func membershipClusterRF(t *testing.T, rf int, opts ...clustertest.Option) *replCluster {
	c := newReplCluster(t, 4, rf, 6, append([]clustertest.Option{clustertest.WithInitial(3)}, opts...)...)
	c.WaitLeaders()
	return c
}

// TestMembershipCheckerCatchesEarlySwitch: two planted bugs together
// make the classic resharding mistake, ownership switched before the copy
// finished. The driver names the new replica the shard's preferred
// replica before it has caught up (membership.Driver.PlantEarlySwitch),
// and servers serve a shard's reads at the replica the map prefers, leader
// or not (kvs.SetServeByMapForTest). With the new replica's links slowed,
// reads of keys written before the move come back missing, and the
// checker must say so; the same scenario without the plants is
// linearizable.
func TestMembershipCheckerCatchesEarlySwitch(t *testing.T) {
	if testing.Short() {
		t.Skip("moves a shard")
	}
	for _, plant := range []bool{false, true} {
		t.Run(fmt.Sprintf("planted=%v", plant), func(t *testing.T) {
			c := membershipCluster(t, plantServeByMap(plant))
			h := linz.NewHistory()
			cl := c.Client(t, func(cfg *client.Config) { cfg.AttemptTimeout = time.Second })
			const sh = 2
			layout, err := shard.New(c.Addrs()[:3], 6, 3, 0)
			require.NoError(t, err)
			var keys []string
			for i := 0; len(keys) < 8; i++ {
				if k := fmt.Sprintf("key%d", i); layout.Shard(k) == sh {
					keys = append(keys, k)
				}
			}
			do := func(cl *client.Client, id int, op wire.Op) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				call := h.Now()
				res, err := cl.Do(ctx, []wire.Op{op})
				h.Record(id, []wire.Op{op}, res, err, call, h.Now())
			}
			for i, k := range keys {
				do(cl, i, wire.Op{Code: wire.OpPut, Key: k, Value: "before"})
			}
			c.Start(3)
			require.NoError(t, c.Links().SetLatency(3, 150*time.Millisecond))
			drv := c.Driver(t, nil)
			drv.PlantEarlySwitch = plant
			require.NoError(t, drv.AddMember(c.Addrs()[3]))
			m, err := drv.Map()
			require.NoError(t, err)
			moved := make(chan error, 1)
			go func() {
				_, _, err := drv.Move(sh, m.Placement[sh][0], c.Addrs()[3])
				moved <- err
			}()
			deadline := time.After(3 * time.Second)
		reads:
			for {
				select {
				case <-deadline:
					break reads
				default:
				}
				// A new client each round routes by the current map.
				cfg, err := c.Admin().Discover(c.Addrs()[1], time.Second)
				require.NoError(t, err)
				fresh, err := client.New(cfg)
				require.NoError(t, err)
				for i, k := range keys {
					do(fresh, i, wire.Op{Code: wire.OpGet, Key: k})
				}
				_ = fresh.Close()
			}
			require.NoError(t, <-moved)
			want := porcupine.Ok
			if plant {
				want = porcupine.Illegal
			}
			require.Equal(t, want, check(t, h.Ops()))
		})
	}
}
