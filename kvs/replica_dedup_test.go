package kvs_test

import (
	"context"
	"fmt"
	"net"
	"net/rpc"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/internal/clustertest"
	"github.com/batchkv/batchkv/kvs/replica"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// rawBatch sends one batch to addr over the binary protocol, as the
// client library would, but with the session and number the test picks.
func rawBatch(t *testing.T, addr string, args *wire.BatchArgs) wire.BatchReply {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	require.NoError(t, err)
	cc, err := wire.NewClientCodec(conn)
	require.NoError(t, err)
	cl := rpc.NewClientWithCodec(cc)
	defer func() { _ = cl.Close() }()
	var reply wire.BatchReply
	require.NoError(t, cl.Call(wire.BatchOpMethod, args, &reply))
	return reply
}

// TestReplicatedDuplicateBatchAppliesOnce: a batch resent with the same
// session and number, as after a lost reply, is not applied again, even
// after later writes to its key, a snapshot, and a restart of every
// replica; a new number on the same session applies.
func TestReplicatedDuplicateBatchAppliesOnce(t *testing.T) {
	timing := replica.DefaultTiming()
	timing.SnapshotThreshold, timing.TrailingLogs, timing.SnapshotInterval = 8, 4, 100*time.Millisecond
	c := newReplCluster(t, 3, 3, 3, clustertest.WithTiming(timing))
	layout, err := shard.New(c.Addrs(), 3, 3, 0)
	require.NoError(t, err)
	// Every key of the test lives in the shard of "k".
	sh := layout.Shard("k")
	filler := "f0"
	for i := 1; layout.Shard(filler) != sh; i++ {
		filler = fmt.Sprintf("f%d", i)
	}
	send := func(session, seq uint64, ops ...wire.Op) wire.BatchReply {
		for {
			leader := c.WaitLeader(sh, -1)
			reply := rawBatch(t, c.Addrs()[leader], &wire.BatchArgs{RingID: layout.ID(), Shard: uint32(sh), Session: session, Seq: seq, Ops: ops})
			require.Equal(t, wire.StatusOK, reply.Status, reply.Err)
			if reply.Results[0].Status != wire.StatusNotLeader {
				return reply
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	get := func(key string) string {
		reply := send(0, 0, wire.Op{Code: wire.OpGet, Key: key})
		return reply.Results[0].Value
	}
	first := []wire.Op{{Code: wire.OpPut, Key: "k", Value: "first"}}
	require.Equal(t, wire.StatusOK, send(77, 1, first...).Results[0].Status)
	require.Equal(t, "first", get("k"))
	send(88, 1, wire.Op{Code: wire.OpPut, Key: "k", Value: "second"})

	// The reply to session 77's batch 1 was "lost"; it is sent again.
	reply := send(77, 1, first...)
	require.Equal(t, wire.StatusOK, reply.Results[0].Status, "a duplicate is acknowledged")
	require.Equal(t, "second", get("k"), "the duplicate was applied again")

	// Enough entries for snapshots, then a restart of every replica: the
	// session table comes back from the snapshot.
	for i := range 40 {
		send(99, uint64(i+1), wire.Op{Code: wire.OpPut, Key: filler, Value: "x"})
	}
	require.Eventually(t, func() bool {
		st, err := c.Status(0)
		return err == nil && st.Shards[sh].Snapshot > 0
	}, 10*time.Second, 100*time.Millisecond, "no snapshot was taken")
	for i := range c.Addrs() {
		c.Stop(i)
	}
	for i := range c.Addrs() {
		c.Start(i)
	}
	send(77, 1, first...)
	require.Equal(t, "second", get("k"), "the duplicate was applied after a restart")

	// A new number on the same session is a new batch.
	send(77, 2, wire.Op{Code: wire.OpPut, Key: "k", Value: "third"})
	require.Equal(t, "third", get("k"))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := c.Client(t).Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "third", v)
}
