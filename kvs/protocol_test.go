package kvs_test

import (
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net"
	"net/rpc"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
)

func dialBinary(t *testing.T, addr string) *rpc.Client {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	codec, err := wire.NewClientCodec(conn)
	require.NoError(t, err)
	rc := rpc.NewClientWithCodec(codec)
	t.Cleanup(func() { _ = rc.Close() })
	return rc
}

// requireClosedByServer reads from conn until the server closes it, and
// fails if that takes longer than within.
func requireClosedByServer(t *testing.T, conn net.Conn, within time.Duration) {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(within)))
	_, err := io.Copy(io.Discard, conn)
	require.NoError(t, err, "io.Copy returns nil at EOF; a timeout means the server kept the connection open")
}

// frame builds a binary request frame around body.
func frame(seq uint64, method byte, body []byte) []byte {
	f := binary.LittleEndian.AppendUint32(nil, uint32(8+1+len(body)))
	f = binary.LittleEndian.AppendUint64(f, seq)
	f = append(f, method)
	return append(f, body...)
}

// TestGarbageClosesOnlyThatConnection: garbage on the port, a preamble
// followed by a broken header, a frame announcing more than the limit, and a
// frame that stalls half-way are each closed by the server, while a client
// on another connection keeps being served.
func TestGarbageClosesOnlyThatConnection(t *testing.T) {
	c := newTestCluster(t, 1, clusterOptions{frameTimeout: 300 * time.Millisecond})
	good := c.client(t)
	rng := rand.New(rand.NewPCG(1, 2))
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(rng.UintN(256))
	}
	oversize := binary.LittleEndian.AppendUint32(nil, wire.MaxFrameBytes+100)
	stalled := frame(1, 1, make([]byte, 1000))[:200]
	cases := []struct {
		name  string
		bytes []byte
	}{
		{"random bytes", garbage},
		{"http nonsense", []byte("<HELLO THERE>\r\n\r\n")}, // "HELLO THERE" is RESP's HELLO
		{"preamble then short frame", append([]byte(wire.Preamble), 3, 0, 0, 0, 1, 2, 3)},
		{"preamble then oversize frame", append([]byte(wire.Preamble), append(oversize, make([]byte, 9)...)...)},
		{"preamble then half a frame", append([]byte(wire.Preamble), stalled...)},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", c.addrs[0])
			require.NoError(t, err)
			defer conn.Close()
			_, err = conn.Write(tc.bytes)
			require.NoError(t, err)
			requireClosedByServer(t, conn, 5*time.Second)
			k := "alive" + strconv.Itoa(i)
			require.NoError(t, good.Put(t.Context(), k, "yes"))
			v, err := good.Get(t.Context(), k)
			require.NoError(t, err)
			require.Equal(t, "yes", v)
		})
	}
	// The server counts a bad connection as it drops it, which may be
	// just after the client sees it closed.
	require.Eventually(t, func() bool { return c.servers[0].Stats().BadConns.Load() >= 3 },
		2*time.Second, 10*time.Millisecond, "bad connections counted: %d", c.servers[0].Stats().BadConns.Load())
}

// TestMalformedBodyKeepsConnection: a well-framed request whose body does
// not decode gets an error reply, and the same connection serves the next
// request.
func TestMalformedBodyKeepsConnection(t *testing.T) {
	c := newTestCluster(t, 1, clusterOptions{})
	conn, err := net.Dial("tcp", c.addrs[0])
	require.NoError(t, err)
	defer conn.Close()
	good := wire.AppendBatchArgs(nil, &wire.BatchArgs{Ops: []wire.Op{{Code: wire.OpPut, Key: "k", Value: "v"}}})
	bad := append([]byte{}, good...)
	bad[9] = 200 // op count says 200 ops in a few bytes
	req := append([]byte(wire.Preamble), frame(1, 1, bad)...)
	req = append(req, frame(2, 1, good)...)
	_, err = conn.Write(req)
	require.NoError(t, err)

	readResp := func() (uint64, string) {
		var hdr [16]byte
		_, err := io.ReadFull(conn, hdr[:])
		require.NoError(t, err)
		n := binary.LittleEndian.Uint32(hdr[:4])
		errLen := binary.LittleEndian.Uint32(hdr[12:])
		rest := make([]byte, n-12)
		_, err = io.ReadFull(conn, rest)
		require.NoError(t, err)
		return binary.LittleEndian.Uint64(hdr[4:12]), string(rest[:errLen])
	}
	seq, msg := readResp()
	require.Equal(t, uint64(1), seq)
	require.Contains(t, msg, "malformed")
	seq, msg = readResp()
	require.Equal(t, uint64(2), seq)
	require.Empty(t, msg)
	v, ok := store.Get(c.servers[0].Store(), "k")
	require.True(t, ok)
	require.Equal(t, "v", v)
}

// TestPipelinedSmallAndLargeBatchesOnOneConnection: small batches, which
// the goroutine that reads them serves itself, and large ones, for which
// it hands the reading on first, pipelined on one connection, are each
// answered once, without error, and applied; closing the connection
// untracks it once every reply is out.
func TestPipelinedSmallAndLargeBatchesOnOneConnection(t *testing.T) {
	c := newTestCluster(t, 1, clusterOptions{})
	conn, err := net.Dial("tcp", c.addrs[0])
	require.NoError(t, err)
	const requests = 200
	req := []byte(wire.Preamble)
	keys := 0
	for i := range requests {
		n := 1
		if i%3 == 0 {
			n = 100 // over the inline limit
		}
		var args wire.BatchArgs
		for range n {
			args.Ops = append(args.Ops, wire.Op{Code: wire.OpPut, Key: "p" + strconv.Itoa(keys), Value: strconv.Itoa(i)})
			keys++
		}
		req = append(req, frame(uint64(i+1), 1, wire.AppendBatchArgs(nil, &args))...)
	}
	_, err = conn.Write(req)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	answered := map[uint64]bool{}
	for range requests {
		var hdr [16]byte
		_, err := io.ReadFull(conn, hdr[:])
		require.NoError(t, err)
		n := binary.LittleEndian.Uint32(hdr[:4])
		rest := make([]byte, n-12)
		_, err = io.ReadFull(conn, rest)
		require.NoError(t, err)
		seq := binary.LittleEndian.Uint64(hdr[4:12])
		require.Zero(t, binary.LittleEndian.Uint32(hdr[12:]), "request %d answered with an error", seq)
		require.False(t, answered[seq], "request %d answered twice", seq)
		answered[seq] = true
	}
	require.Len(t, answered, requests)
	for k := range keys {
		_, ok := store.Get(c.servers[0].Store(), "p"+strconv.Itoa(k))
		require.True(t, ok, "key p%d was not stored", k)
	}
	require.NoError(t, conn.Close())
	require.Eventually(t, func() bool { return c.servers[0].Conns() == 0 }, 5*time.Second, 10*time.Millisecond,
		"the server still tracks the closed connection")
}

// TestStalledFramesDoNotReserveMemory: connections that announce frames
// near the size limit and then stall cost the server only what they sent.
func TestStalledFramesDoNotReserveMemory(t *testing.T) {
	c := newTestCluster(t, 1, clusterOptions{frameTimeout: 3 * time.Second})
	const conns = 20
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range conns {
		conn, err := net.Dial("tcp", c.addrs[0])
		require.NoError(t, err)
		defer conn.Close()
		f := binary.LittleEndian.AppendUint32(nil, wire.MaxFrameBytes)
		f = append(f, make([]byte, 9+1024)...)
		_, err = conn.Write(append([]byte(wire.Preamble), f...))
		require.NoError(t, err)
	}
	// Let the server read what was sent.
	require.Eventually(t, func() bool {
		return c.servers[0].Stats().BytesIn.Load() >= conns*(8+4+9+1024)
	}, 5*time.Second, 10*time.Millisecond)
	time.Sleep(100 * time.Millisecond) // the reads land before the buffers grow
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapInuse) - int64(before.HeapInuse)
	// Eager allocation would take conns × 64 MiB = 1.25 GiB.
	require.Less(t, grown, int64(conns*2<<20), "heap grew by %d bytes", grown)
}

// Types as the course skeleton declares them, in its own package: gob
// matches them to ours by field name.
type (
	skeletonGetRequest  struct{ Key string }
	skeletonGetResponse struct{ Value string }
	skeletonPutRequest  struct{ Key, Value string }
	skeletonPutResponse struct{}
)

// TestSkeletonClient drives the servers exactly as the course skeleton's
// client does: rpc.DialHTTP and KVService.Get/Put. With two servers, a key
// written through one server and read through the other is forwarded to its
// owner both times.
func TestSkeletonClient(t *testing.T) {
	c := newTestCluster(t, 2, clusterOptions{})
	dial := func(addr string) *rpc.Client {
		rc, err := rpc.DialHTTP("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = rc.Close() })
		return rc
	}
	a, b := dial(c.addrs[0]), dial(c.addrs[1])
	for i := range 50 {
		k := strconv.Itoa(i)
		require.NoError(t, a.Call("KVService.Put", &skeletonPutRequest{Key: k, Value: "v" + k}, &skeletonPutResponse{}))
	}
	for i := range 50 {
		k := strconv.Itoa(i)
		var resp skeletonGetResponse
		require.NoError(t, b.Call("KVService.Get", &skeletonGetRequest{Key: k}, &resp))
		require.Equal(t, "v"+k, resp.Value)
	}
	var resp skeletonGetResponse
	require.NoError(t, a.Call("KVService.Get", &skeletonGetRequest{Key: "missing"}, &resp))
	require.Equal(t, "", resp.Value, "a missing key reads as the empty string")
	require.Error(t, a.Call("KVService.Put", &skeletonPutRequest{Key: "", Value: "v"}, &skeletonPutResponse{}))
	require.Positive(t, c.servers[0].Stats().Forwarded.Load()+c.servers[1].Stats().Forwarded.Load())
	require.Equal(t, 50, c.servers[0].Store().Len()+c.servers[1].Store().Len())
}
