package kvs_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// TestLargeBatchesAreCutIntoBoundedEntries: at RF=3, a batch whose writes
// to one shard would make a log entry past wire.MaxEntryBytes is cut by
// the client into requests within it: the shard's log grows by an entry
// a cut, every op is applied once, and ops on one key keep their batch
// order. A request past the bound from another client is refused with
// StatusTooLarge and changes nothing, its reads served; one op of the
// largest value is taken.
func TestLargeBatchesAreCutIntoBoundedEntries(t *testing.T) {
	c := newReplCluster(t, 3, 3, 1)
	cl := c.Client(t)
	ctx := t.Context()
	leader := c.WaitLeader(0, -1)
	lastIndex := func() uint64 {
		st, err := c.Status(leader)
		require.NoError(t, err)
		return st.Shards[0].LastIndex
	}
	value := func(i int) string { return fmt.Sprintf("%06d", i) + strings.Repeat("v", 16<<10) }

	// 300 puts of 16 KiB, distinct keys: about 4.9 MB, so at least five
	// entries of at most 1 MiB.
	ops := make([]wire.Op, 300)
	for i := range ops {
		ops[i] = wire.Op{Code: wire.OpPut, Key: fmt.Sprintf("k%d", i), Value: value(i)}
	}
	allCuts, _ := wire.EntryCuts(ops)
	cuts := len(allCuts) - 1
	require.GreaterOrEqual(t, cuts, 5)
	before := lastIndex()
	res, err := cl.Do(ctx, ops)
	require.NoError(t, err)
	for i, r := range res {
		require.Equal(t, wire.StatusOK, r.Status, "op %d", i)
	}
	grew := lastIndex() - before
	require.GreaterOrEqual(t, grew, uint64(cuts), "the batch was not cut into entries")
	t.Logf("300 puts of 16 KiB: %d entries (%d cuts)", grew, cuts)
	gets := make([]wire.Op, len(ops))
	for i := range gets {
		gets[i] = wire.Op{Code: wire.OpGet, Key: ops[i].Key}
	}
	res, err = cl.Do(ctx, gets)
	require.NoError(t, err)
	for i, r := range res {
		require.Equal(t, wire.StatusOK, r.Status, "get %d", i)
		require.Equal(t, value(i), r.Value, "get %d", i)
	}

	// One key written first and last, read in between: the cuts go one
	// after another, in order.
	ops[0] = wire.Op{Code: wire.OpPut, Key: "same", Value: value(-1)}
	ops[150] = wire.Op{Code: wire.OpGet, Key: "same"}
	ops[299] = wire.Op{Code: wire.OpPut, Key: "same", Value: value(-2)}
	res, err = cl.Do(ctx, ops)
	require.NoError(t, err)
	require.Equal(t, wire.StatusOK, res[150].Status)
	require.Equal(t, value(-1), res[150].Value, "the get did not see the batch's earlier put")
	v, err := cl.Get(ctx, "same")
	require.NoError(t, err)
	require.Equal(t, value(-2), v, "the batch's last put is not the one that stayed")

	// A call whose context has ended sends none of its cuts: every op
	// is left unavailable, and none applied.
	done, cancel := context.WithCancel(ctx)
	cancel()
	late := make([]wire.Op, len(ops))
	for i := range late {
		late[i] = wire.Op{Code: wire.OpPut, Key: fmt.Sprintf("late%d", i), Value: value(i)}
	}
	res, err = cl.Do(done, late)
	require.Error(t, err)
	for i, r := range res {
		require.Equal(t, wire.StatusUnavail, r.Status, "op %d of a call whose context had ended", i)
	}
	_, err = cl.Get(ctx, "late0")
	require.ErrorIs(t, err, client.ErrNotFound, "a cut was sent after the context ended")

	// Another client's request past the bound: writes refused, reads
	// served, nothing applied.
	layout, err := shard.New(c.Addrs(), 1, 3, 0)
	require.NoError(t, err)
	big := strings.Repeat("b", wire.MaxValueBytes)
	raw := []wire.Op{{Code: wire.OpGet, Key: "k1"}, {Code: wire.OpPut, Key: "new1", Value: big}, {Code: wire.OpPut, Key: "new2", Value: big}}
	_, over := wire.EntryBound(raw)
	require.True(t, over)
	reply := rawBatch(t, c.Addrs()[c.WaitLeader(0, -1)], &wire.BatchArgs{RingID: layout.ID(), Ops: raw})
	require.Equal(t, wire.StatusOK, reply.Status, reply.Err)
	require.Equal(t, wire.StatusOK, reply.Results[0].Status)
	require.Equal(t, value(1), reply.Results[0].Value)
	require.Equal(t, wire.StatusTooLarge, reply.Results[1].Status)
	require.Equal(t, wire.StatusTooLarge, reply.Results[2].Status)
	for _, k := range []string{"new1", "new2"} {
		_, err := cl.Get(ctx, k)
		require.ErrorIs(t, err, client.ErrNotFound, "a refused write was applied")
	}

	// One op of the largest value is within what a server takes.
	reply = rawBatch(t, c.Addrs()[c.WaitLeader(0, -1)], &wire.BatchArgs{RingID: layout.ID(), Ops: raw[1:2]})
	require.Equal(t, wire.StatusOK, reply.Results[0].Status)
	v, err = cl.Get(ctx, "new1")
	require.NoError(t, err)
	require.Equal(t, big, v)
	c.WaitCaughtUp(30 * time.Second)
}
