package kvs_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/internal/linz"
	"github.com/batchkv/batchkv/wire"
)

// respDo sends ops as one pipeline of GET, SET and DEL through rc and
// returns their results as the history records them: a GET that failed
// is unanswered (StatusUnavail), a write that failed may or may not have
// applied (StatusUnknown). sent is false when rc could not connect, so
// that nothing was sent: such a batch belongs in no history.
func respDo(ctx context.Context, rc *redis.Client, ops []wire.Op) (res []wire.Result, sent bool) {
	pipe := rc.Pipeline()
	cmds := make([]redis.Cmder, len(ops))
	for i, op := range ops {
		switch op.Code {
		case wire.OpGet:
			cmds[i] = pipe.Get(ctx, op.Key)
		case wire.OpPut:
			cmds[i] = pipe.Set(ctx, op.Key, op.Value, 0)
		default:
			cmds[i] = pipe.Del(ctx, op.Key)
		}
	}
	_, err := pipe.Exec(ctx)
	var opErr *net.OpError
	sent = !errors.As(err, &opErr) || opErr.Op != "dial"
	res = make([]wire.Result, len(ops))
	for i, cmd := range cmds {
		err := cmd.Err()
		switch {
		case ops[i].Code == wire.OpGet && errors.Is(err, redis.Nil):
			res[i].Status = wire.StatusNotFound
		case ops[i].Code == wire.OpGet && err == nil:
			res[i] = wire.Result{Status: wire.StatusOK, Value: cmd.(*redis.StringCmd).Val()}
		case ops[i].Code == wire.OpGet:
			res[i].Status = wire.StatusUnavail
		case err == nil:
			res[i].Status = wire.StatusOK
		default:
			res[i].Status = wire.StatusUnknown
		}
	}
	return res, sent
}

// TestRESPLinearizableThroughLeaderKill: Redis clients pipeline GET, SET
// and DEL over a few hot keys to all three servers of an RF=3 cluster
// while a shard's leader is stopped and restarted. The history must be
// linearizable per key.
func TestRESPLinearizableThroughLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("needs elections")
	}
	c := newReplCluster(t, 3, 3, 3)
	for sh := range 3 {
		c.WaitLeader(sh, -1)
	}
	h := linz.NewHistory()
	var stop atomic.Bool
	var wg sync.WaitGroup
	var answered, unsent atomic.Int64
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	keys := keyNames(6)
	for id := range 6 {
		rc := redis.NewClient(&redis.Options{Addr: c.Addrs()[id%3], Protocol: 2 + id%2, MaxRetries: -1,
			DialTimeout: time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: time.Second})
		t.Cleanup(func() { _ = rc.Close() })
		rng := rand.New(rand.NewPCG(seed, uint64(id)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := 0; !stop.Load(); b++ {
				ops := linz.RandomBatch(rng, id, b, keys, 4)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				call := h.Now()
				res, sent := respDo(ctx, rc, ops)
				cancel()
				if !sent {
					// The server is down: a client that could not
					// connect would otherwise fill the history with
					// writes of unknown outcome, which the checker must
					// try in every order, while nothing of them was sent.
					unsent.Add(1)
					time.Sleep(20 * time.Millisecond)
					continue
				}
				h.Record(id, ops, res, nil, call, h.Now())
				for _, r := range res {
					if r.Status.Applied() {
						answered.Add(1)
					}
				}
			}
		}()
	}
	time.Sleep(time.Second)
	l := c.WaitLeader(0, -1)
	t.Logf("stopping server %d, leader of shard 0", l)
	c.Stop(l)
	c.WaitLeader(0, l)
	time.Sleep(time.Second)
	c.Start(l)
	time.Sleep(time.Second)
	stop.Store(true)
	wg.Wait()
	t.Logf("%d ops answered, %d in the history, %d batches not sent (no connection)", answered.Load(), len(h.Ops()), unsent.Load())
	require.Greater(t, answered.Load(), int64(500), "too few ops got through to test anything")
	require.Equal(t, porcupine.Ok, check(t, h.Ops()))
}

// respStaleReadScenario is staleReadScenario through RESP: keys are
// written through server x+1 while server x, the preferred leader of the
// keys' shard, is cut off from Raft, then read through x.
func respStaleReadScenario(t *testing.T, plant bool) []porcupine.Operation {
	c, keys, sh := staleReadCluster(t, plant)
	const x = 0 // the keys' preferred leader (staleReadCluster)
	h := linz.NewHistory()
	do := func(id, server int, op wire.Op) {
		rc := redisClient(t, c.Addrs()[server], 2, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		call := h.Now()
		res, _ := respDo(ctx, rc, []wire.Op{op})
		h.Record(id, []wire.Op{op}, res, nil, call, h.Now())
	}
	for i, k := range keys {
		do(i, x+1, wire.Op{Code: wire.OpPut, Key: k, Value: "old"})
	}
	c.Isolate(x, true)
	c.WaitLeader(sh, x)
	for i, k := range keys {
		do(i, x+1, wire.Op{Code: wire.OpPut, Key: k, Value: "new"})
		do(i, x, wire.Op{Code: wire.OpGet, Key: k})
	}
	return h.Ops()
}

// TestRESPCheckerCatchesStaleReads: the RESP history and its check catch
// the planted stale-read bug, and pass the real code in the same scenario.
func TestRESPCheckerCatchesStaleReads(t *testing.T) {
	if testing.Short() {
		t.Skip("needs elections")
	}
	t.Run("real", func(t *testing.T) {
		require.Equal(t, porcupine.Ok, check(t, respStaleReadScenario(t, false)))
	})
	t.Run("planted", func(t *testing.T) {
		require.Equal(t, porcupine.Illegal, check(t, respStaleReadScenario(t, true)))
	})
}
