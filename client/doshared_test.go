package client_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/wire"
)

// sharedBatch is one caller's batch for the DoShared tests: on each of its
// keys a put, a get, a second put and a get, so that a result read from
// the wrong place in a shared reply, or ops applied out of order, show.
func sharedBatch(caller, round int) (ops []wire.Op, want []wire.Result) {
	for k := range 3 {
		key := fmt.Sprintf("shared-c%d-k%d", caller, k)
		v1, v2 := fmt.Sprintf("%d-%d-first", caller, round), fmt.Sprintf("%d-%d-second", caller, round)
		ops = append(ops, wire.Op{Code: wire.OpPut, Key: key, Value: v1}, wire.Op{Code: wire.OpGet, Key: key},
			wire.Op{Code: wire.OpPut, Key: key, Value: v2}, wire.Op{Code: wire.OpGet, Key: key})
		want = append(want, wire.Result{Status: wire.StatusOK}, wire.Result{Status: wire.StatusOK, Value: v1},
			wire.Result{Status: wire.StatusOK}, wire.Result{Status: wire.StatusOK, Value: v2})
	}
	return ops, want
}

// TestDoSharedLoneBatchGoesAtOnce: a caller alone with its server waits
// for no linger: each DoShared is one batch, sent at once.
func TestDoSharedLoneBatchGoesAtOnce(t *testing.T) {
	srv, cl := lingeringClient(t)
	before := srv.Stats().BatchCount()
	start := time.Now()
	for round := range 10 {
		ops, want := sharedBatch(0, round)
		got := make([]wire.Result, len(ops))
		require.NoError(t, cl.DoShared(context.Background(), ops, got))
		require.Equal(t, want, got)
	}
	require.Less(t, time.Since(start), longLinger/5, "a lone batch waited for the linger")
	require.Equal(t, uint64(10), srv.Stats().BatchCount()-before, "one request per lone batch")
}

// TestDoSharedCoalescesConcurrentBatches: batches of concurrent callers
// share requests (fewer requests than calls), none waits for the linger,
// and each caller gets its own results, its ops applied in its order.
func TestDoSharedCoalescesConcurrentBatches(t *testing.T) {
	srv, cl := lingeringClient(t)
	const callers, rounds = 32, 20
	before := srv.Stats().BatchCount()
	start := time.Now()
	errs := make(chan error, callers)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for round := range rounds {
				ops, want := sharedBatch(c, round)
				got := make([]wire.Result, len(ops))
				if err := cl.DoShared(context.Background(), ops, got); err != nil {
					errs <- err
					return
				}
				for i := range want {
					if got[i] != want[i] {
						errs <- fmt.Errorf("caller %d round %d op %d (%s %s): got %+v, want %+v", c, round, i, ops[i].Code, ops[i].Key, got[i], want[i])
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Less(t, time.Since(start), longLinger/5, "batches behind one in flight waited for the linger")
	requests := srv.Stats().BatchCount() - before
	t.Logf("%d batches from %d callers in %d requests", callers*rounds, callers, requests)
	require.Less(t, requests, uint64(callers*rounds), "concurrent callers' batches did not share requests")
}

// TestDoSharedSplitsByServer: over a ring of two servers each caller's
// batch is split by owner, every result comes back to its op's place,
// and both servers are sent parts.
func TestDoSharedSplitsByServer(t *testing.T) {
	a, b := listen(t, "127.0.0.1:0"), listen(t, "127.0.0.1:0")
	peers := []string{a.Addr().String(), b.Addr().String()}
	servers := []*kvs.Server{serve(t, a, peers), serve(t, b, peers)}
	cl, err := client.New(client.Config{Servers: peers, Linger: longLinger})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })

	const callers, rounds = 16, 10
	errs := make(chan error, callers)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for round := range rounds {
				ops, want := sharedBatch(c, round)
				got := make([]wire.Result, len(ops))
				if err := cl.DoShared(context.Background(), ops, got); err != nil {
					errs <- err
					return
				}
				for i := range want {
					if got[i] != want[i] {
						errs <- fmt.Errorf("caller %d round %d op %d (%s %s): got %+v, want %+v", c, round, i, ops[i].Code, ops[i].Key, got[i], want[i])
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for i, srv := range servers {
		require.NotZero(t, srv.Stats().BatchCount(), "server %d was sent no part", i)
	}
}

// TestDoSharedInvalidOpsStayOut: ops that fail wire.Op.Check get their
// status and are not sent, so a caller's bad op fails neither its own
// valid ops nor those of a batch it would have shared.
func TestDoSharedInvalidOpsStayOut(t *testing.T) {
	srv, cl := lingeringClient(t)
	ops := []wire.Op{
		{Code: wire.OpPut, Key: "valid-a", Value: "a"},
		{Code: wire.OpPut, Key: "", Value: "no key"},
		{Code: wire.OpPut, Key: "huge", Value: strings.Repeat("x", wire.MaxValueBytes+1)},
		{Code: wire.OpGet, Key: "valid-a"},
	}
	got := make([]wire.Result, len(ops))
	before := srv.Stats().BatchCount()
	require.NoError(t, cl.DoShared(context.Background(), ops, got))
	require.Equal(t, wire.Result{Status: wire.StatusOK}, got[0])
	require.Equal(t, ops[1].Check(), got[1].Status)
	require.Equal(t, wire.StatusTooLarge, got[2].Status)
	require.Equal(t, wire.Result{Status: wire.StatusOK, Value: "a"}, got[3])
	require.Equal(t, uint64(1), srv.Stats().BatchCount()-before)

	// Only invalid ops: nothing is sent.
	bad := ops[1:3]
	got = make([]wire.Result, len(bad))
	require.NoError(t, cl.DoShared(context.Background(), bad, got))
	require.Equal(t, wire.StatusTooLarge, got[1].Status)
	require.Equal(t, uint64(1), srv.Stats().BatchCount()-before, "a batch of invalid ops was sent")
	_, err := cl.Get(context.Background(), "huge")
	require.ErrorIs(t, err, client.ErrNotFound)
}
