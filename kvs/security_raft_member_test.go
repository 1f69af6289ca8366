package kvs_test

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/auth"
	"github.com/batchkv/batchkv/kvs/replica/transport"
	"github.com/batchkv/batchkv/wire"
)

// A member speaking Raft badly. A node certificate for a replica's host
// may speak Raft for that replica's shard, but what it sends is checked
// before hashicorp/raft decodes it (transport.Limits): a length that
// claims more bytes than it sends must not make a server allocate them.

// memberConn opens a Raft connection for shard 0 to addr with the node
// certificate of 127.0.0.1 (a replica's host).
func memberConn(t *testing.T, dir, addr string) net.Conn {
	cfg := loadID(t, dir, "s1").ClientConfig()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, auth.ForAddr(cfg, addr))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Write(binary.LittleEndian.AppendUint32([]byte(transport.Preamble), 0))
	require.NoError(t, err)
	return c
}

// claimingAppendEntries is an AppendEntries (rpc type 0) whose one entry's
// AppendedAt is a string that claims n bytes, none of which follow: the
// msgpack decoder hashicorp/raft uses allocates a time's bytes before it
// reads them.
func claimingAppendEntries(n uint32) []byte {
	b := []byte{0x00, 0x81, 0xa7}
	b = append(b, "Entries"...)
	b = append(b, 0x91, 0x81, 0xaa)
	b = append(b, "AppendedAt"...)
	b = append(b, 0xdb)
	return binary.BigEndian.AppendUint32(b, n)
}

func totalAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// TestRaftMemberCannotClaimMemory: a member's AppendEntries that claims
// 3.75 GiB for one entry's time, sent to every server on 8 connections
// each, has each connection closed without the servers allocating the
// claim, and is logged and counted as a bad connection; the shard keeps
// its leader and serves.
func TestRaftMemberCannotClaimMemory(t *testing.T) {
	dir := certDir(t)
	c := newSecCluster(t, dir)
	cl := c.kv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, cl.Put(ctx, "k1", "v1"))
	before := c.settle(t)

	badConns := func() (n uint64) {
		for _, a := range c.addrs {
			st, err := c.admin.Status(a, wire.StatusRequest{}, 2*time.Second)
			require.NoError(t, err)
			n += st.Node.BadConn
		}
		return n
	}
	badBefore := badConns()
	const claim = 0xF000_0000
	const perServer = 8
	allocBefore := totalAlloc()
	var conns []net.Conn
	for _, addr := range c.addrs {
		for range perServer {
			conn := memberConn(t, dir, addr)
			_, err := conn.Write(claimingAppendEntries(claim))
			require.NoError(t, err)
			conns = append(conns, conn)
		}
	}
	for i, conn := range conns {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := io.ReadFull(conn, make([]byte, 1))
		require.Error(t, err, "connection %d must be closed by the server", i)
		require.NotErrorIs(t, err, os.ErrDeadlineExceeded, "connection %d still open after 5 s", i)
	}
	grew := totalAlloc() - allocBefore
	t.Logf("the servers allocated %d MiB while %d connections claimed %d MiB each", grew>>20, len(conns), uint64(claim)>>20)
	require.Less(t, grew, uint64(512<<20), "the servers allocated what a member claimed")
	require.GreaterOrEqual(t, c.logs.Count("raft message refused"), len(conns), "every refusal is logged")
	require.GreaterOrEqual(t, badConns()-badBefore, uint64(len(conns)), "every refusal is counted (batchkv_bad_connections_total)")

	after := c.shard(t)
	for _, s := range after {
		require.Equal(t, before.Term, s.Term, "the term moved")
		require.Equal(t, before.Leader, s.Leader, "the leader changed")
	}
	require.NoError(t, cl.Put(ctx, "k2", "v2"))
	v, err := cl.Get(ctx, "k1")
	require.NoError(t, err)
	require.Equal(t, "v1", v)
}
