package client_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// sharedBatch is one caller's batch for the DoShared tests: on each of its
// keys a put, a get, a second put and a get, each value naming its key,
// so that a result read from the wrong place in a shared reply, or ops
// applied out of order, show.
func sharedBatch(caller, round int) (ops []wire.Op, want []wire.Result) {
	for k := range 3 {
		key := fmt.Sprintf("shared-c%d-k%d", caller, k)
		v1, v2 := fmt.Sprintf("%d-%d-%d-first", caller, round, k), fmt.Sprintf("%d-%d-%d-second", caller, round, k)
		ops = append(ops, wire.Op{Code: wire.OpPut, Key: key, Value: v1}, wire.Op{Code: wire.OpGet, Key: key},
			wire.Op{Code: wire.OpPut, Key: key, Value: v2}, wire.Op{Code: wire.OpGet, Key: key})
		want = append(want, wire.Result{Status: wire.StatusOK}, wire.Result{Status: wire.StatusOK, Value: v1},
			wire.Result{Status: wire.StatusOK}, wire.Result{Status: wire.StatusOK, Value: v2})
	}
	return ops, want
}

// concurrently runs fn for callers goroutines at once and fails t with the
// errors they return.
func concurrently(t *testing.T, callers int, fn func(caller int) error) {
	t.Helper()
	errs := make(chan error, callers)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			if err := fn(c); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// sharedRounds sends caller's sharedBatch of each round through
// DoShared, with an op without a key fifth if invalid, and returns the
// first error or wrong result.
func sharedRounds(cl *client.Client, caller, rounds int, invalid bool) error {
	for round := range rounds {
		ops, want := sharedBatch(caller, round)
		if invalid {
			ops = slices.Insert(ops, 5, wire.Op{Code: wire.OpPut, Key: ""})
			want = slices.Insert(want, 5, wire.Result{Status: ops[5].Check()})
		}
		got := make([]wire.Result, len(ops))
		if err := cl.DoShared(context.Background(), ops, got); err != nil {
			return err
		}
		for i := range want {
			if got[i] != want[i] {
				return fmt.Errorf("caller %d round %d op %d (%s %s): got %+v, want %+v", caller, round, i, ops[i].Code, ops[i].Key, got[i], want[i])
			}
		}
	}
	return nil
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
	concurrently(t, callers, func(c int) error { return sharedRounds(cl, c, rounds, false) })
	require.Less(t, time.Since(start), longLinger/5, "batches behind one in flight waited for the linger")
	requests := srv.Stats().BatchCount() - before
	t.Logf("%d batches from %d callers in %d requests", callers*rounds, callers, requests)
	require.Less(t, requests, uint64(callers*rounds), "concurrent callers' batches did not share requests")
}

// TestDoSharedSplitsByServer: over a ring of two servers each caller's
// batch (with an invalid op among its ops) is split by owner, every
// result comes back to its op's place, both servers are sent parts, and
// no part waits for the linger.
func TestDoSharedSplitsByServer(t *testing.T) {
	a, b := listen(t, "127.0.0.1:0"), listen(t, "127.0.0.1:0")
	peers := []string{a.Addr().String(), b.Addr().String()}
	servers := []*kvs.Server{serve(t, a, peers), serve(t, b, peers)}
	cl, err := client.New(client.Config{Servers: peers, Linger: longLinger})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })

	// Alone: each part goes at once, the last from the caller's goroutine
	// and the other from one of its own.
	start := time.Now()
	ops, want := sharedBatch(99, 0)
	got := make([]wire.Result, len(ops))
	require.NoError(t, cl.DoShared(context.Background(), ops, got))
	require.Equal(t, want, got)
	require.Less(t, time.Since(start), longLinger/5, "a lone caller's part waited for the linger")

	const callers, rounds = 16, 10
	start = time.Now()
	concurrently(t, callers, func(c int) error { return sharedRounds(cl, c, rounds, true) })
	require.Less(t, time.Since(start), longLinger/5, "parts waited for the linger")
	for i, srv := range servers {
		require.NotZero(t, srv.Stats().BatchCount(), "server %d was sent no part", i)
	}
}

// TestDoSharedHonoursItsContext: a batch waiting behind one in flight to a
// server that never answers returns when its caller's context ends, and
// not after Config.BatchTimeout; at RF>1 its get is unavailable and its
// write's outcome unknown, each in its own place though the batch spans
// two shards (so its ops' order differs from the order of its parts).
func TestDoSharedHonoursItsContext(t *testing.T) {
	silent := newSilentServer(t)
	addr := silent.addr
	// Two shards on one server: a replicated client's routing. A
	// BatchTimeout well past the 2 s the test allows, and short enough
	// for the batches left on the silent server to end soon after.
	cl, err := client.New(client.Config{Servers: []string{addr}, Shards: 2, RF: 1, Linger: longLinger, BatchTimeout: 3 * time.Second})
	require.NoError(t, err)
	defer silent.closeBefore(cl)
	layout, err := shard.New([]string{addr}, 2, 1, 0)
	require.NoError(t, err)
	keyOf := func(sh int) string {
		for i := 0; ; i++ {
			if k := fmt.Sprintf("ctx%d", i); layout.Shard(k) == sh {
				return k
			}
		}
	}
	k0, k1 := keyOf(0), keyOf(1)

	first, stopFirst := context.WithCancel(context.Background())
	defer stopFirst()
	go func() {
		_ = cl.DoShared(first, []wire.Op{{Code: wire.OpGet, Key: k0}}, make([]wire.Result, 1))
	}()
	silent.awaitRequest(t) // shard 0's batch is in flight

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	// The put (shard 1) goes alone; the get (shard 0) waits behind the
	// first batch.
	ops := []wire.Op{{Code: wire.OpPut, Key: k1, Value: "v"}, {Code: wire.OpGet, Key: k0}}
	got := make([]wire.Result, len(ops))
	start := time.Now()
	err = cl.DoShared(ctx, ops, got)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 2*time.Second, "a shared batch outlived its caller's context")
	require.Equal(t, []wire.Result{{Status: wire.StatusUnknown}, {Status: wire.StatusUnavail}}, got)
}

// silentServer accepts connections, reads what comes, and never answers.
type silentServer struct {
	addr      string
	ln        net.Listener
	requested chan struct{} // closed once a request's bytes came
	once      sync.Once
	read      atomic.Int64 // bytes read, preambles included
	mu        sync.Mutex
	conns     []net.Conn
}

func newSilentServer(t *testing.T) *silentServer {
	s := &silentServer{ln: listen(t, "127.0.0.1:0"), requested: make(chan struct{})}
	s.addr = s.ln.Addr().String()
	go func() {
		for {
			c, err := s.ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			go func() {
				buf := make([]byte, 4096)
				read := 0
				for {
					n, err := c.Read(buf)
					s.read.Add(int64(n))
					if read += n; read > len(wire.Preamble) {
						s.once.Do(func() { close(s.requested) })
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return s
}

// awaitRequest waits until a request's bytes came.
func (s *silentServer) awaitRequest(t *testing.T) {
	t.Helper()
	select {
	case <-s.requested:
	case <-time.After(10 * time.Second):
		t.Fatal("no request reached the silent server")
	}
}

// closeBefore closes the listener and the connections, so that the calls
// in flight fail at once, and then cl, which need not wait out their
// BatchTimeout.
func (s *silentServer) closeBefore(cl *client.Client) {
	_ = s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	_ = cl.Close()
}

// TestDoSharedFullPartGoesAtOnce: a part of Config.MaxBatchOps ops or more
// is sent at once, as DoInto sends it, even while a batch to its target
// holds the one slot in flight, where a smaller part waits to share the
// next batch.
func TestDoSharedFullPartGoesAtOnce(t *testing.T) {
	silent := newSilentServer(t)
	// One batch in flight at most: a full batch of shared ops waits for
	// the slot, which the batch in flight holds.
	cl, err := client.New(client.Config{Servers: []string{silent.addr}, MaxBatchOps: 4, MaxInFlight: 1, Linger: longLinger, BatchTimeout: 3 * time.Second})
	require.NoError(t, err)
	defer silent.closeBefore(cl)
	first, stopFirst := context.WithCancel(context.Background())
	defer stopFirst()
	go func() {
		_ = cl.DoShared(first, []wire.Op{{Code: wire.OpGet, Key: "in-flight"}}, make([]wire.Result, 1))
	}()
	silent.awaitRequest(t)

	send := func(n int) (sent bool) {
		time.Sleep(50 * time.Millisecond) // what came before has been read
		before := silent.read.Load()
		ops := make([]wire.Op, n)
		for i := range ops {
			ops[i] = wire.Op{Code: wire.OpGet, Key: fmt.Sprintf("full%d-%d", n, i)}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		require.ErrorIs(t, cl.DoShared(ctx, ops, make([]wire.Result, n)), context.DeadlineExceeded)
		return silent.read.Load() > before
	}
	require.False(t, send(3), "a part under MaxBatchOps did not wait to share the next batch") // the test's control
	require.True(t, send(4), "a full part waited behind the batch in flight")
}

// TestDoSharedLargeValues: callers whose batches are each within the
// limits alone get the same answers when they share requests: no shared
// request over wire.MaxFrameBytes, and no get or conditional put (a swap
// of a small value for the large one, which it reads) answered TooLarge
// because other callers' ops took the values a batch may read.
func TestDoSharedLargeValues(t *testing.T) {
	_, cl := lingeringClient(t)
	const callers, each = 6, 20
	value := strings.Repeat("v", 1<<20)
	for _, code := range []wire.OpCode{wire.OpPut, wire.OpGet, wire.OpPutIf} {
		concurrently(t, callers, func(c int) error {
			ops := make([]wire.Op, each)
			for i := range ops {
				ops[i] = wire.Op{Code: code, Key: fmt.Sprintf("large-c%d-%d", c, i)}
				switch code {
				case wire.OpPut:
					ops[i].Value = value
				case wire.OpPutIf:
					ops[i].Value, ops[i].Cond = "small", wire.CondAlways
				}
			}
			got := make([]wire.Result, each)
			if err := cl.DoShared(context.Background(), ops, got); err != nil {
				return fmt.Errorf("caller %d, %s: %w", c, code, err)
			}
			for i := range got {
				if got[i].Status != wire.StatusOK || (code != wire.OpPut && got[i].Value != value) {
					return fmt.Errorf("caller %d, %s %s: status %s, %d bytes", c, code, ops[i].Key, got[i].Status, len(got[i].Value))
				}
			}
			return nil
		})
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
