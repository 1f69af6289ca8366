package wire

import (
	"bufio"
	"io"
	"net"
	"net/rpc"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	server = <-accepted
	require.NotNil(t, server)
	t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	return client, server
}

// TestDecodedFramesOutliveTheNextFrame: the codecs decode keys and values
// without copying them out of the frame they arrived in, so a frame's
// strings must stay as they were after later frames on the same
// connection are read (a body buffer reused across frames would rewrite
// them).
func TestDecodedFramesOutliveTheNextFrame(t *testing.T) {
	cconn, sconn := tcpPair(t)
	cc, err := NewClientCodec(cconn)
	require.NoError(t, err)
	sr := bufio.NewReader(sconn)
	_, err = io.ReadFull(sr, make([]byte, len(Preamble)))
	require.NoError(t, err)
	sc := NewServerCodec(sconn, sr, 0)

	batch := func(i int) *BatchArgs {
		fill := strings.Repeat(string(rune('a'+i)), 100)
		return &BatchArgs{Ops: []Op{{Code: OpPut, Key: "k" + fill, Value: "v" + fill}, {Code: OpGet, Key: "g" + fill}}}
	}
	got := exchange(t, 3,
		func(i int) error {
			return cc.WriteRequest(&rpc.Request{ServiceMethod: BatchOpMethod, Seq: uint64(i)}, batch(i))
		},
		func(a *BatchArgs) error {
			var req rpc.Request
			if err := sc.ReadRequestHeader(&req); err != nil {
				return err
			}
			return sc.ReadRequestBody(a)
		})
	for i, a := range got {
		require.Equal(t, *batch(i), a, "request %d after later requests were read", i)
	}

	reply := func(i int) *BatchReply {
		return &BatchReply{Results: []Result{{Status: StatusOK, Value: strings.Repeat(string(rune('p'+i)), 100)}}}
	}
	replies := exchange(t, 3,
		func(i int) error {
			return sc.WriteResponse(&rpc.Response{ServiceMethod: BatchOpMethod, Seq: uint64(i)}, reply(i))
		},
		func(r *BatchReply) error {
			var resp rpc.Response
			if err := cc.ReadResponseHeader(&resp); err != nil {
				return err
			}
			return cc.ReadResponseBody(r)
		})
	for i, r := range replies {
		require.Equal(t, *reply(i), r, "reply %d after later replies were read", i)
	}
}

// exchange sends n frames, each through send and then read back through
// receive, and returns what was read, in order.
func exchange[T any](t *testing.T, n int, send func(i int) error, receive func(*T) error) []T {
	t.Helper()
	var got []T
	for i := range n {
		require.NoError(t, send(i))
		var v T
		require.NoError(t, receive(&v))
		got = append(got, v)
	}
	return got
}
