package kvs_test

import (
	"fmt"
	"net/rpc"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
)

func TestBatchAppliesInOrder(t *testing.T) {
	c := newTestCluster(t, 1, clusterOptions{})
	cl := c.client(t)
	ops := []wire.Op{
		{Code: wire.OpGet, Key: "k"},
		{Code: wire.OpPut, Key: "k", Value: "v1"},
		{Code: wire.OpGet, Key: "k"},
		{Code: wire.OpPut, Key: "k", Value: "v2"},
		{Code: wire.OpGet, Key: "k"},
		{Code: wire.OpDelete, Key: "k"},
		{Code: wire.OpGet, Key: "k"},
		{Code: wire.OpDelete, Key: "never"},
		{Code: wire.OpPut, Key: "empty", Value: ""},
		{Code: wire.OpGet, Key: "empty"},
	}
	res, err := cl.Do(t.Context(), ops)
	require.NoError(t, err)
	require.Equal(t, []wire.Result{
		{Status: wire.StatusNotFound},
		{Status: wire.StatusOK},
		{Status: wire.StatusOK, Value: "v1"},
		{Status: wire.StatusOK},
		{Status: wire.StatusOK, Value: "v2"},
		{Status: wire.StatusOK},
		{Status: wire.StatusNotFound},
		{Status: wire.StatusOK},
		{Status: wire.StatusOK},
		{Status: wire.StatusOK, Value: ""},
	}, res)
}

func TestSingleOpCalls(t *testing.T) {
	c := newTestCluster(t, 3, clusterOptions{})
	cl := c.client(t)
	ctx := t.Context()
	_, err := cl.Get(ctx, "a")
	require.ErrorIs(t, err, client.ErrNotFound)
	require.NoError(t, cl.Put(ctx, "a", "1"))
	v, err := cl.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, "1", v)
	require.NoError(t, cl.Delete(ctx, "a"))
	_, err = cl.Get(ctx, "a")
	require.ErrorIs(t, err, client.ErrNotFound)

	_, err = cl.Get(ctx, "")
	require.ErrorIs(t, err, client.ErrInvalid)
	require.ErrorIs(t, cl.Put(ctx, "k", strings.Repeat("x", wire.MaxValueBytes+1)), client.ErrTooLarge)
	require.ErrorIs(t, cl.Put(ctx, strings.Repeat("k", wire.MaxKeyBytes+1), "v"), client.ErrTooLarge)
}

// TestBatchesSplitAcrossServers: a batch over many keys is split by owner,
// every server gets its share, and results come back in order.
func TestBatchesSplitAcrossServers(t *testing.T) {
	c := newTestCluster(t, 3, clusterOptions{})
	cl := c.client(t)
	puts, gets := numberedOps(3000)
	_, err := cl.Do(t.Context(), puts)
	require.NoError(t, err)
	res, err := cl.Do(t.Context(), gets)
	require.NoError(t, err)
	for i, r := range res {
		require.Equal(t, wire.Result{Status: wire.StatusOK, Value: "v" + strconv.Itoa(i)}, r)
	}
	total := 0
	for _, s := range c.servers {
		n := s.Store().Len()
		require.Greater(t, n, 700, "every server owns a share")
		total += n
	}
	require.Equal(t, 3000, total, "each key stored once")
	for _, s := range c.servers {
		require.Zero(t, s.Stats().Forwarded.Load(), "a routed client needs no forwarding")
	}
}

// TestClientKnowingOneHostSeesWholeStore: a client given one server of
// three is told its ring is wrong, switches to unrouted batches, and the
// server forwards each op to its owner.
func TestClientKnowingOneHostSeesWholeStore(t *testing.T) {
	c := newTestCluster(t, 3, clusterOptions{})
	full := c.client(t)
	one := c.client(t, c.addrs[1])
	puts, gets := numberedOps(500)
	_, err := one.Do(t.Context(), puts)
	require.NoError(t, err)
	res, err := full.Do(t.Context(), gets)
	require.NoError(t, err)
	for i, r := range res {
		require.Equal(t, "v"+strconv.Itoa(i), r.Value)
	}
	require.Positive(t, c.servers[1].Stats().Forwarded.Load())
	// Keys live only on their owners.
	for i, s := range c.servers {
		require.NotEqual(t, 500, s.Store().Len(), "server %d holds every key", i)
	}
}

func TestBadOpsAreRejectedAndChangeNothing(t *testing.T) {
	c := newTestCluster(t, 2, clusterOptions{})
	cl := c.client(t)
	longKey := strings.Repeat("k", wire.MaxKeyBytes+1)
	cases := []struct {
		name string
		op   wire.Op
		want wire.Status
	}{
		{"empty key", wire.Op{Code: wire.OpPut, Key: "", Value: "v"}, wire.StatusBadKey},
		{"key over limit", wire.Op{Code: wire.OpPut, Key: longKey, Value: "v"}, wire.StatusTooLarge},
		{"value over limit", wire.Op{Code: wire.OpPut, Key: "big", Value: strings.Repeat("v", wire.MaxValueBytes+1)}, wire.StatusTooLarge},
		{"unknown op code", wire.Op{Code: 9, Key: "odd", Value: "v"}, wire.StatusBadOp},
		{"zero op code", wire.Op{Code: 0, Key: "odd"}, wire.StatusBadOp},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ops := []wire.Op{
				{Code: wire.OpPut, Key: "before", Value: tc.name},
				tc.op,
				{Code: wire.OpPut, Key: "after", Value: tc.name},
			}
			res, err := cl.Do(t.Context(), ops)
			require.NoError(t, err)
			require.Equal(t, wire.StatusOK, res[0].Status)
			require.Equal(t, tc.want, res[1].Status)
			require.Equal(t, wire.StatusOK, res[2].Status)
			got, err := cl.Do(t.Context(), []wire.Op{
				{Code: wire.OpGet, Key: "before"}, {Code: wire.OpGet, Key: tc.op.Key}, {Code: wire.OpGet, Key: "after"},
				{Code: wire.OpGet, Key: "odd"}, {Code: wire.OpGet, Key: "big"},
			})
			require.NoError(t, err)
			require.Equal(t, tc.name, got[0].Value)
			require.NotEqual(t, wire.StatusOK, got[1].Status, "rejected op must not be applied")
			require.Equal(t, tc.name, got[2].Value)
			require.Equal(t, wire.StatusNotFound, got[3].Status)
			require.Equal(t, wire.StatusNotFound, got[4].Status)
		})
	}
}

func TestOversizeBatches(t *testing.T) {
	c := newTestCluster(t, 1, clusterOptions{})
	cl := c.client(t)
	tooMany := make([]wire.Op, wire.MaxBatchOps+1)
	for i := range tooMany {
		tooMany[i] = wire.Op{Code: wire.OpPut, Key: "k" + strconv.Itoa(i), Value: "v"}
	}
	t.Run("client refuses too many ops", func(t *testing.T) {
		_, err := cl.Do(t.Context(), tooMany)
		require.ErrorIs(t, err, client.ErrTooLarge)
	})
	t.Run("server rejects too many ops over the binary codec", func(t *testing.T) {
		rc := dialBinary(t, c.addrs[0])
		var reply wire.BatchReply
		err := rc.Call(wire.BatchOpMethod, &wire.BatchArgs{Ops: tooMany}, &reply)
		require.ErrorContains(t, err, "too many ops")
		// The connection is still usable.
		require.NoError(t, rc.Call(wire.BatchOpMethod, &wire.BatchArgs{Ops: tooMany[:1]}, &reply))
	})
	t.Run("server rejects too many ops over gob", func(t *testing.T) {
		rc, err := rpc.DialHTTP("tcp", c.addrs[0])
		require.NoError(t, err)
		defer rc.Close()
		var reply wire.BatchReply
		require.NoError(t, rc.Call(wire.BatchOpMethod, &wire.BatchArgs{Ops: tooMany}, &reply))
		require.Equal(t, wire.StatusTooLarge, reply.Status)
		require.Contains(t, reply.Err, "limit")
	})
	t.Run("client refuses a frame over the byte limit", func(t *testing.T) {
		big := strings.Repeat("v", wire.MaxValueBytes)
		ops := make([]wire.Op, wire.MaxFrameBytes/wire.MaxValueBytes+1)
		for i := range ops {
			ops[i] = wire.Op{Code: wire.OpPut, Key: "big" + strconv.Itoa(i), Value: big}
		}
		_, err := cl.Do(t.Context(), ops)
		require.ErrorIs(t, err, client.ErrTooLarge)
	})
	for i := range tooMany[:1] {
		_, err := cl.Get(t.Context(), tooMany[i].Key+"x")
		require.ErrorIs(t, err, client.ErrNotFound)
	}
	require.Equal(t, 1, c.servers[0].Store().Len(), "only the one accepted put was applied")
}

// TestConcurrentCallersCoalesce: single-op calls from many goroutines are
// batched (far fewer RPCs than ops) and each caller reads its own writes.
func TestConcurrentCallersCoalesce(t *testing.T) {
	c := newTestCluster(t, 2, clusterOptions{})
	cl := c.client(t)
	const callers, each = 64, 50
	errs := make(chan error, callers)
	for g := range callers {
		go func() {
			for i := range each {
				k := "g" + strconv.Itoa(g) + "-" + strconv.Itoa(i)
				if err := cl.Put(t.Context(), k, k); err != nil {
					errs <- err
					return
				}
				v, err := cl.Get(t.Context(), k)
				if err == nil && v != k {
					err = fmt.Errorf("read %q after writing %q", v, k)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range callers {
		require.NoError(t, <-errs)
	}
	var batches uint64
	for _, s := range c.servers {
		batches += s.Stats().BatchCount()
	}
	ops := uint64(callers * each * 2)
	t.Logf("%d ops in %d batches", ops, batches)
	require.Less(t, batches, ops/2, "ops from concurrent callers should share batches")
}

// numberedOps returns puts of keys "0".."n-1" (value "v"+key) and gets of
// the same keys.
func numberedOps(n int) (puts, gets []wire.Op) {
	for i := range n {
		k := strconv.Itoa(i)
		puts = append(puts, wire.Op{Code: wire.OpPut, Key: k, Value: "v" + k})
		gets = append(gets, wire.Op{Code: wire.OpGet, Key: k})
	}
	return puts, gets
}

// TestRepliesStayWithinAFrame: a small request may ask for far more bytes
// than a reply frame holds (here 100 gets of one 1 MiB value). The server
// reads values up to the reply's limit, a frame's worth and at most half
// the server's reply budget, and answers the rest TooLarge, rather than
// building a reply it cannot send (or, with 65,536 such gets, running out
// of memory), or one that takes the reply budget over alone.
func TestRepliesStayWithinAFrame(t *testing.T) {
	for _, store := range store.Kinds {
		t.Run(store, func(t *testing.T) {
			c := newTestCluster(t, 1, clusterOptions{store: store})
			cl := c.client(t)
			big := strings.Repeat("v", wire.MaxValueBytes)
			require.NoError(t, cl.Put(t.Context(), "big", big))
			ops := make([]wire.Op, 100)
			for i := range ops {
				ops[i] = wire.Op{Code: wire.OpGet, Key: "big"}
			}
			res, err := cl.Do(t.Context(), ops)
			require.NoError(t, err)
			fits := int(min(wire.MaxFrameBytes-1<<20, kvs.DefaultLimits().ReplyBudget/2)) / wire.MaxValueBytes
			for i, r := range res {
				if i < fits {
					require.Equal(t, wire.StatusOK, r.Status, "get %d", i)
					require.Len(t, r.Value, wire.MaxValueBytes)
				} else {
					require.Equal(t, wire.StatusTooLarge, r.Status, "get %d", i)
				}
			}
		})
	}
}

// TestReadModeIsChecked: an unknown read mode, or lease reads on a server
// that does not replicate, is refused when the server is made.
func TestReadModeIsChecked(t *testing.T) {
	_, err := kvs.New(kvs.Config{ReadMode: "lease"})
	require.ErrorContains(t, err, "needs a replicated server")
	_, err = kvs.New(kvs.Config{Self: "127.0.0.1:1", RF: 3, Peers: []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"},
		DataDir: t.TempDir(), ReadMode: "sometimes"})
	require.ErrorContains(t, err, `read mode "sometimes"`)
}
