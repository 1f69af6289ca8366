package kvs_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// TestReplicatedMixedBatchIsOneEntry: a batch of reads and writes costs
// one log entry (the reads ride on the write, with no read barrier of
// their own), a read-only batch one barrier entry, and every op still
// answers as if the batch ran in order: a get before a write of its key
// reads the old value, a get after it the new one, a get of a key the
// batch does not write its current value. A retried batch whose get read
// a key before writing it answers that get "unavailable" rather than
// with its own write.
func TestReplicatedMixedBatchIsOneEntry(t *testing.T) {
	c := newReplCluster(t, 3, 3, 3)
	layout, err := shard.New(c.Addrs(), 3, 3, 0)
	require.NoError(t, err)
	sh := layout.Shard("a")
	var keys []string // keys of sh
	for i := 0; len(keys) < 3; i++ {
		if k := fmt.Sprintf("key%d", i); layout.Shard(k) == sh {
			keys = append(keys, k)
		}
	}
	a, b, other := keys[0], keys[1], keys[2]
	leader := c.WaitPreferredLeader(layout, sh)
	lastIndex := func() uint64 {
		st, err := c.Status(leader)
		require.NoError(t, err)
		return st.Shards[sh].LastIndex
	}
	send := func(session, seq uint64, ops ...wire.Op) []wire.Result {
		reply := rawBatch(t, c.Addrs()[leader], &wire.BatchArgs{RingID: layout.ID(), Shard: uint32(sh), Session: session, Seq: seq, Ops: ops})
		require.Equal(t, wire.StatusOK, reply.Status, reply.Err)
		return reply.Results
	}
	get := func(k string) wire.Op { return wire.Op{Code: wire.OpGet, Key: k} }
	put := func(k, v string) wire.Op { return wire.Op{Code: wire.OpPut, Key: k, Value: v} }

	res := send(1, 1, put(a, "a1"), put(other, "o1"))
	require.Equal(t, wire.StatusOK, res[0].Status)
	// Let the leader's first entries settle so LastIndex moves only for us.
	time.Sleep(200 * time.Millisecond)

	before := lastIndex()
	res = send(1, 2,
		get(a), get(a), put(a, "a2"), get(a), // old, old, write, new
		get(b), wire.Op{Code: wire.OpDelete, Key: b}, get(b), // missing, delete, missing
		get(other), // not written by the batch
		put(a, "a3"), get(a))
	require.Equal(t, before+1, lastIndex(), "a mixed batch is one log entry")
	want := []wire.Result{
		{Status: wire.StatusOK, Value: "a1"}, {Status: wire.StatusOK, Value: "a1"}, {Status: wire.StatusOK}, {Status: wire.StatusOK, Value: "a2"},
		{Status: wire.StatusNotFound}, {Status: wire.StatusOK}, {Status: wire.StatusNotFound},
		{Status: wire.StatusOK, Value: "o1"},
		{Status: wire.StatusOK}, {Status: wire.StatusOK, Value: "a3"},
	}
	require.Equal(t, want, res)

	before = lastIndex()
	res = send(0, 0, get(a), get(other))
	require.Equal(t, before+1, lastIndex(), "a read-only batch is one barrier entry")
	require.Equal(t, []wire.Result{{Status: wire.StatusOK, Value: "a3"}, {Status: wire.StatusOK, Value: "o1"}}, res)

	// The same batch again (a client's retry after a lost reply): its
	// writes are not applied twice, and the get that read a before the
	// batch wrote it cannot be answered any more.
	res = send(1, 2, get(a), put(a, "a2"), get(other))
	require.Equal(t, []wire.Result{{Status: wire.StatusUnavail}, {Status: wire.StatusOK}, {Status: wire.StatusOK, Value: "o1"}}, res)
	require.Equal(t, []wire.Result{{Status: wire.StatusOK, Value: "a3"}}, send(0, 0, get(a)), "the duplicate was not applied")
}
