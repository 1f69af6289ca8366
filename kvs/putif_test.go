package kvs_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/linz"
	"github.com/batchkv/batchkv/internal/planted"
	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// counter is a checked CAS-increment load: workers goroutines each
// increment one key each times, by compare-and-set loops that retry from
// the value a failed CAS returns, each CAS recorded in h.
type counter struct {
	key     string
	workers int
	each    int
	h       *linz.History
	// done counts increments whose CAS was answered "written"; unknown,
	// those whose outcome was never learned; refused, CASes answered
	// "not written" and retried.
	done, unknown, refused atomic.Int64
}

// run increments through clients (worker w uses clients[w%len]); odd
// workers use Client.CompareAndSwap (the auto-batcher), even ones a
// one-op explicit batch (Do). started, if not nil, is called once a
// quarter of the increments are done.
func (c *counter) run(t *testing.T, clients []*client.Client, started func()) {
	t.Helper()
	var once sync.Once
	var wg sync.WaitGroup
	for w := range c.workers {
		cl := clients[w%len(clients)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			cur, found := "", false
			for range c.each {
				for {
					if c.done.Load() >= int64(c.workers*c.each/4) && started != nil {
						once.Do(started)
					}
					op := wire.Op{Code: wire.OpPutIf, Cond: wire.CondEqual, Key: c.key, Expect: cur, Value: next(cur)}
					if !found {
						op.Cond, op.Expect = wire.CondAbsent, ""
					}
					res, err := c.cas(cl, w, op)
					switch {
					case err != nil:
						c.unknown.Add(1)
						cur, found = c.read(cl)
						continue
					case res.Status.Applied():
						c.done.Add(1)
						cur, found = op.Value, true
					default:
						c.refused.Add(1)
						cur, found = res.Value, res.Status.Present()
						continue
					}
					break
				}
			}
		}()
	}
	wg.Wait()
}

// next is the counter value after cur ("" counts as 0).
func next(cur string) string {
	n, _ := strconv.Atoi(cur)
	return strconv.Itoa(n + 1)
}

func (c *counter) cas(cl *client.Client, w int, op wire.Op) (wire.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	call := c.h.Now()
	var res wire.Result
	var err error
	if w%2 == 1 {
		var r client.PutIfResult
		if op.Cond == wire.CondEqual {
			r, err = cl.CompareAndSwap(ctx, op.Key, op.Expect, op.Value)
		} else {
			r, err = cl.PutIfAbsent(ctx, op.Key, op.Value)
		}
		res = resultOf(r, err)
	} else {
		var rs []wire.Result
		rs, err = cl.Do(ctx, []wire.Op{op})
		res = rs[0]
	}
	c.h.Record(w, []wire.Op{op}, []wire.Result{res}, err, call, c.h.Now())
	return res, err
}

// read returns the counter's value after an unknown outcome.
func (c *counter) read(cl *client.Client) (string, bool) {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		v, err := cl.Get(ctx, c.key)
		cancel()
		if err == nil || err == client.ErrNotFound {
			return v, err == nil
		}
	}
}

// resultOf turns a client.PutIfResult back into the wire result it came
// from, for the history.
func resultOf(r client.PutIfResult, err error) wire.Result {
	switch {
	case err != nil:
		return wire.Result{Status: wire.StatusUnknown}
	case r.Written && r.Found:
		return wire.Result{Status: wire.StatusOK, Value: r.Value}
	case r.Written:
		return wire.Result{Status: wire.StatusNotFound}
	case r.Found:
		return wire.Result{Status: wire.StatusMismatch, Value: r.Value}
	}
	return wire.Result{Status: wire.StatusMismatchNotFound}
}

// final reads the counter through cl.
func (c *counter) final(t *testing.T, cl *client.Client) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	v, err := cl.Get(ctx, c.key)
	require.NoError(t, err)
	n, err := strconv.Atoi(v)
	require.NoError(t, err)
	t.Logf("counter %d after %d increments written, %d unknown, %d CASes refused and retried",
		n, c.done.Load(), c.unknown.Load(), c.refused.Load())
	return n
}

// TestPutIfCounter: 12 goroutines increment one counter 40 times each with
// compare-and-set on two memory-only servers (RF=1): through a client
// that routes itself, one that speaks gob (net/rpc's HTTP path), and one
// that knows one server, which forwards what the other owns. The counter
// ends at exactly 480 and the history is linearizable. With a store whose
// conditional put is not atomic (planted.RacyPutIf), increments are lost
// and both checks say so.
func TestPutIfCounter(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(store.Store) store.Store
	}{{"real", nil}, {"planted racy put-if", planted.RacyPutIf}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCluster(t, 2, clusterOptions{wrap: tc.wrap})
			gob, err := client.New(client.Config{Servers: c.addrs, Codec: "gob"})
			require.NoError(t, err)
			t.Cleanup(func() { _ = gob.Close() })
			clients := []*client.Client{c.client(t), gob, c.client(t, c.addrs[0]), c.client(t, c.addrs[1])}
			ctr := &counter{key: "counter", workers: 12, each: 40, h: linz.NewHistory()}
			ctr.run(t, clients, nil)
			require.Zero(t, ctr.unknown.Load(), "no faults were injected, so every outcome is known")
			n := ctr.final(t, clients[0])
			if tc.wrap == nil {
				require.Equal(t, ctr.workers*ctr.each, n)
				require.Equal(t, porcupine.Ok, check(t, ctr.h.Ops()))
				return
			}
			require.Less(t, n, ctr.workers*ctr.each, "the racy put-if lost no increment")
			require.Equal(t, porcupine.Illegal, check(t, ctr.h.Ops()))
		})
	}
}

// TestLinearizableWithConditionalPuts: TestLinearizable's workload with
// compare-and-sets, put-if-absent, put-if-present and get-and-set among
// the ops (linz.CASBatch), on each store; the racy put-if must fail the
// check.
func TestLinearizableWithConditionalPuts(t *testing.T) {
	for _, name := range store.Kinds {
		t.Run(name, func(t *testing.T) {
			w := newLinWorkload()
			w.store, w.cas, w.batches = name, true, 200
			ops := w.run(t)
			require.Zero(t, w.failedOps.Load(), "no faults were injected, so no op may fail")
			require.Equal(t, porcupine.Ok, check(t, ops))
		})
	}
	t.Run("planted racy put-if", func(t *testing.T) {
		w := newLinWorkload()
		w.wrap, w.cas, w.batches = planted.RacyPutIf, true, 200
		require.Equal(t, porcupine.Illegal, check(t, w.run(t)))
	})
}

// conditionalPutsThroughLeaderKill runs, on 3 servers (RF=3, 3 shards,
// every shard's log on disk), a counter incremented by compare-and-set
// from 8 goroutines and, beside it, 4 clients sending batches of gets,
// puts, deletes and conditional puts over 6 hot keys (linz.DriveCAS); once
// a quarter of the increments are in, the leader of the counter's shard is
// stopped, and started again after a new leader has served for a while.
// It returns the counter (with its tallies), its final value, and the
// whole history.
func conditionalPutsThroughLeaderKill(t *testing.T, plant bool) (*counter, int, []porcupine.Operation) {
	c := newReplCluster(t, 3, 3, 3, plantCASOnLeader(plant))
	for sh := range 3 {
		c.WaitLeader(sh, -1)
	}
	h := linz.NewHistory()
	ctr := &counter{key: "counter", workers: 8, each: 25, h: h}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	cl := c.Client(t, func(cfg *client.Config) { cfg.AttemptTimeout = time.Second })
	stop := make(chan struct{})
	driven := make(chan struct{})
	go func() {
		defer close(driven)
		linz.DriveCAS(4, 3, keyNames(6), 2*time.Millisecond, 10*time.Second, cl.Do, h, seed, stop, nil)
	}()
	clients := []*client.Client{cl, c.Client(t, func(cfg *client.Config) { cfg.AttemptTimeout = time.Second })}
	quarter, counted := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(counted)
		ctr.run(t, clients, func() { close(quarter) })
	}()
	select {
	case <-quarter:
	case <-counted:
		t.Fatal("the counter finished before a quarter of it was counted")
	}
	sh := shardOf(c, ctr.key)
	l := c.WaitLeader(sh, -1)
	t.Logf("stopping server %d, leader of the counter's shard", l)
	c.Stop(l)
	c.WaitLeader(sh, l)
	time.Sleep(500 * time.Millisecond)
	c.Start(l)
	<-counted
	close(stop)
	<-driven
	return ctr, ctr.final(t, cl), h.Ops()
}

// TestReplicatedConditionalPutsThroughLeaderKill: at RF=3 through a
// leader kill, the counter ends at exactly the increments its CASes
// reported written (every one of them answered, none twice though
// batches were resent to the new leader), and the history, conditional
// puts and all, is linearizable. With the bug planted that decides each
// conditional put on the leader before the log, two CASes from one value
// both succeed: increments are lost and the check fails.
func TestReplicatedConditionalPutsThroughLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("a leader kill and an election take a few seconds")
	}
	t.Run("real", func(t *testing.T) {
		ctr, n, ops := conditionalPutsThroughLeaderKill(t, false)
		conds := 0
		for _, op := range ops {
			if op.Input.(linz.Input).Code == wire.OpPutIf {
				conds++
			}
		}
		t.Logf("%d ops in the history, %d of them conditional puts", len(ops), conds)
		require.Zero(t, ctr.unknown.Load(), "an increment's outcome was never learned")
		require.Equal(t, ctr.workers*ctr.each, n)
		require.Equal(t, porcupine.Ok, check(t, ops))
	})
	t.Run("planted CAS decided on the leader before the log", func(t *testing.T) {
		ctr, n, ops := conditionalPutsThroughLeaderKill(t, true)
		require.Less(t, n, int(ctr.done.Load()), "no increment was lost")
		require.Equal(t, porcupine.Illegal, check(t, ops))
	})
}

// TestReplicatedPutIfRetryAnsweredOnce: a batch of conditional puts resent
// with its session and number, as after a lost reply, gets the answers it
// got the first time, though its key changed since, and is not applied
// again.
func TestReplicatedPutIfRetryAnsweredOnce(t *testing.T) {
	c := newReplCluster(t, 3, 3, 1)
	layout, err := shard.New(c.Addrs(), 1, 3, 0)
	require.NoError(t, err)
	send := func(session, seq uint64, ops ...wire.Op) wire.BatchReply {
		for {
			leader := c.WaitLeader(0, -1)
			reply := rawBatch(t, c.Addrs()[leader], &wire.BatchArgs{RingID: layout.ID(), Shard: 0, Session: session, Seq: seq, Ops: ops})
			require.Equal(t, wire.StatusOK, reply.Status, reply.Err)
			if reply.Results[0].Status != wire.StatusNotLeader {
				return reply
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	send(1, 1, wire.Op{Code: wire.OpPut, Key: "n", Value: "1"})
	batch := []wire.Op{
		{Code: wire.OpPutIf, Cond: wire.CondEqual, Key: "n", Expect: "1", Value: "2"},
		{Code: wire.OpGet, Key: "n"},
		{Code: wire.OpPutIf, Cond: wire.CondAbsent, Key: "lock", Value: "me"},
	}
	first := send(77, 1, batch...)
	require.Equal(t, []wire.Result{{Status: wire.StatusOK, Value: "1"}, {Status: wire.StatusOK, Value: "2"}, {Status: wire.StatusNotFound}}, first.Results)
	send(88, 1, wire.Op{Code: wire.OpPut, Key: "n", Value: "1"}, wire.Op{Code: wire.OpDelete, Key: "lock"})

	again := send(77, 1, batch...)
	require.Equal(t, first.Results[0], again.Results[0])
	require.Equal(t, wire.StatusUnavail, again.Results[1].Status, "what the get read then is gone")
	require.Equal(t, first.Results[2], again.Results[2])
	check := send(0, 0, wire.Op{Code: wire.OpGet, Key: "n"}, wire.Op{Code: wire.OpGet, Key: "lock"})
	require.Equal(t, "1", check.Results[0].Value, "the retry's CAS was decided again")
	require.Equal(t, wire.StatusNotFound, check.Results[1].Status, "the retry's put-if-absent was decided again")
}

// TestClientConditionalPuts: each of the client's conditional writes, and
// the op in an explicit batch, against a memory-only server, over the
// binary codec and over gob.
func TestClientConditionalPuts(t *testing.T) {
	c := newTestCluster(t, 1, clusterOptions{})
	for _, codec := range []string{"binary", "gob"} {
		t.Run(codec, func(t *testing.T) {
			cl, err := client.New(client.Config{Servers: c.addrs, Codec: codec})
			require.NoError(t, err)
			t.Cleanup(func() { _ = cl.Close() })
			ctx := t.Context()
			k := "k-" + codec
			r, err := cl.PutIfPresent(ctx, k, "x")
			require.NoError(t, err)
			require.Equal(t, client.PutIfResult{}, r, "absent: not written, nothing found")
			r, err = cl.PutIfAbsent(ctx, k, "1")
			require.NoError(t, err)
			require.Equal(t, client.PutIfResult{Written: true}, r)
			r, err = cl.PutIfAbsent(ctx, k, "2")
			require.NoError(t, err)
			require.Equal(t, client.PutIfResult{Found: true, Value: "1"}, r, "held: its value comes back")
			r, err = cl.CompareAndSwap(ctx, k, "0", "2")
			require.NoError(t, err)
			require.Equal(t, client.PutIfResult{Found: true, Value: "1"}, r)
			r, err = cl.CompareAndSwap(ctx, k, "1", "2")
			require.NoError(t, err)
			require.Equal(t, client.PutIfResult{Written: true, Found: true, Value: "1"}, r)
			r, err = cl.PutIfPresent(ctx, k, "3")
			require.NoError(t, err)
			require.Equal(t, client.PutIfResult{Written: true, Found: true, Value: "2"}, r)
			r, err = cl.Swap(ctx, k, "4")
			require.NoError(t, err)
			require.Equal(t, client.PutIfResult{Written: true, Found: true, Value: "3"}, r)
			r, err = cl.Swap(ctx, k+"-new", "n")
			require.NoError(t, err)
			require.Equal(t, client.PutIfResult{Written: true}, r)

			res, err := cl.Do(ctx, []wire.Op{
				{Code: wire.OpPutIf, Cond: wire.CondEqual, Key: k, Expect: "4", Value: "5"},
				{Code: wire.OpGet, Key: k},
				{Code: wire.OpPutIf, Cond: wire.CondEqual, Key: k, Expect: "4", Value: "6"},
			})
			require.NoError(t, err)
			first, err := client.PutIfOutcome(res[0])
			require.NoError(t, err)
			require.True(t, first.Written)
			require.Equal(t, "5", res[1].Value, "a get after a CAS in its batch sees it")
			second, err := client.PutIfOutcome(res[2])
			require.NoError(t, err)
			require.Equal(t, client.PutIfResult{Found: true, Value: "5"}, second)

			_, err = cl.CompareAndSwap(ctx, k, strings.Repeat("e", wire.MaxValueBytes+1), "v")
			require.ErrorIs(t, err, client.ErrTooLarge)
			_, err = cl.PutIfAbsent(ctx, "", "v")
			require.ErrorIs(t, err, client.ErrInvalid)
			_, err = client.PutIfOutcome(wire.Result{Status: wire.StatusUnknown})
			require.Error(t, err)
		})
	}
}

// TestPutIfBadInputChangesNothing: conditional puts a client of ours would
// not send (no condition, an unknown one, an expected value with a
// condition that takes none, an expected value over the limit) reach the
// server over the binary protocol and over gob; each is refused with its
// status, the ops around them are applied, and the key is unchanged.
func TestPutIfBadInputChangesNothing(t *testing.T) {
	c := newTestCluster(t, 1, clusterOptions{})
	bad := []wire.Op{
		{Code: wire.OpPutIf, Key: "k", Value: "x"},
		{Code: wire.OpPutIf, Cond: 99, Key: "k", Value: "x"},
		{Code: wire.OpPutIf, Cond: wire.CondAbsent, Key: "k", Expect: "v", Value: "x"},
		{Code: wire.OpPutIf, Cond: wire.CondEqual, Key: "k", Expect: strings.Repeat("e", wire.MaxValueBytes+1), Value: "x"},
		{Code: wire.OpPutIf + 1, Key: "k", Value: "x"},
	}
	want := []wire.Status{wire.StatusBadOp, wire.StatusBadOp, wire.StatusBadOp, wire.StatusTooLarge, wire.StatusBadOp}
	for _, codec := range []string{"binary", "gob"} {
		t.Run(codec, func(t *testing.T) {
			cl, err := client.New(client.Config{Servers: c.addrs, Codec: codec})
			require.NoError(t, err)
			t.Cleanup(func() { _ = cl.Close() })
			require.NoError(t, cl.Put(t.Context(), "k", "v"))
			ops := append([]wire.Op{{Code: wire.OpPut, Key: "before", Value: "1"}}, bad...)
			ops = append(ops, wire.Op{Code: wire.OpGet, Key: "k"})
			res, err := cl.Do(t.Context(), ops)
			require.NoError(t, err)
			require.Equal(t, wire.StatusOK, res[0].Status)
			for i, st := range want {
				require.Equal(t, st, res[1+i].Status, "op %+v", bad[i].Cond)
			}
			require.Equal(t, wire.Result{Status: wire.StatusOK, Value: "v"}, res[len(res)-1])
		})
	}
}
