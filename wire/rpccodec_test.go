package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/rpc"
	"slices"
	"strings"
	"testing"
	"time"

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

// codecPair returns a client and a server codec over the two ends of a
// loopback TCP connection, the preamble already read.
func codecPair(t *testing.T) (*ClientCodec, *ServerCodec) {
	t.Helper()
	cconn, sconn := tcpPair(t)
	cc, err := NewClientCodec(cconn)
	require.NoError(t, err)
	sr := bufio.NewReader(sconn)
	_, err = io.ReadFull(sr, make([]byte, len(Preamble)))
	require.NoError(t, err)
	sc := NewServerCodec(sconn, sr, 0)
	return cc, sc
}

// TestDecodedFramesOutliveTheNextFrame: the codecs decode keys and values
// without copying them out of the frame they arrived in, so a frame's
// strings must stay as they were after later frames on the same
// connection are read (a body buffer reused across frames would rewrite
// them).
func TestDecodedFramesOutliveTheNextFrame(t *testing.T) {
	cc, sc := codecPair(t)

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

// TestRepliesWrittenInPieces: a reply over wholeReply is written piece by
// piece, large values straight from where they lie, so the codec never
// holds a second copy of a whole large reply (a 5.5 MiB reply once left a
// 5.5 MiB buffer behind).
// What the client reads is the reply that was sent: small values across
// pieces, values at and past the direct-write size, empty and missing
// values, and a reply over the frame limit turned into an error.
func TestRepliesWrittenInPieces(t *testing.T) {
	cc, sc := codecPair(t)

	big := strings.Repeat("b", 1<<20)
	var results []Result
	for i := range 5000 { // about 500 KiB of small values: more than one piece
		results = append(results, Result{Status: StatusOK, Value: strings.Repeat(string(rune('a'+i%26)), 100)})
	}
	results = append(results, Result{Status: StatusOK, Value: big[:directValue-1]}, Result{Status: StatusOK, Value: big[:directValue]},
		Result{Status: StatusNotFound}, Result{Status: StatusOK, Value: ""})
	for range wholeReply>>20 + 1 { // past the size encoded whole
		results = append(results, Result{Status: StatusOK, Value: big}, Result{Status: StatusOK, Value: "s"})
	}
	// The largest last, so that the buffer it would leave is what is
	// checked at the end.
	replies := []*BatchReply{
		{Status: StatusOK, Results: make([]Result, 65)}, // over the frame limit once filled below
		{Status: StatusNotLeader, Err: "not the leader", Leader: "127.0.0.1:2"},
		{Status: StatusOK, Leader: "127.0.0.1:1", Results: results},
	}
	for i := range replies[0].Results {
		replies[0].Results[i] = Result{Status: StatusOK, Value: big}
	}

	sent := make(chan error, 1)
	go func() {
		for i, r := range replies {
			if err := sc.WriteResponse(&rpc.Response{ServiceMethod: BatchOpMethod, Seq: uint64(i)}, r); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	for i, want := range replies {
		var resp rpc.Response
		require.NoError(t, cc.ReadResponseHeader(&resp))
		require.Equal(t, uint64(i), resp.Seq)
		if i == 0 {
			require.Contains(t, resp.Error, "over the", "a reply over the frame limit is an error")
			require.NoError(t, cc.ReadResponseBody(nil))
			continue
		}
		var got BatchReply
		require.NoError(t, cc.ReadResponseBody(&got))
		require.Empty(t, resp.Error)
		require.Equal(t, *want, got, "reply %d", i)
	}
	require.NoError(t, <-sent)
	require.LessOrEqual(t, cap(sc.out), 2*(replyPiece+directValue), "the codec kept a buffer the size of a whole reply")
}

// requestFrame is a whole request frame of the binary protocol.
func requestFrame(seq uint64, a *BatchArgs) []byte {
	out := []byte{0, 0, 0, 0}
	out = binary.LittleEndian.AppendUint64(out, seq)
	out = append(out, methodBatchOp)
	out = AppendBatchArgs(out, a)
	binary.LittleEndian.PutUint32(out[:4], uint32(len(out)-4))
	return out
}

// TestFrameTimeoutOnlyWhileAFrameArrives: a frame that arrived whole is
// read without a deadline (none is needed: it cannot stall), the idle
// wait for the next frame has none, and a frame that stops halfway
// still fails at the frame timeout.
func TestFrameTimeoutOnlyWhileAFrameArrives(t *testing.T) {
	cconn, sconn := tcpPair(t)
	const timeout = 200 * time.Millisecond
	sc := NewServerCodec(sconn, nil, timeout)
	var timed bool // whether the last frame read had a deadline set
	read := func() (BatchArgs, error) {
		var req rpc.Request
		var a BatchArgs
		if err := sc.ReadRequestHeader(&req); err != nil {
			return a, err
		}
		timed = sc.timed
		return a, sc.ReadRequestBody(&a)
	}
	args := &BatchArgs{Ops: []Op{{Code: OpPut, Key: "k", Value: strings.Repeat("v", 100)}}}
	frame := requestFrame(1, args)

	_, err := cconn.Write(frame)
	require.NoError(t, err)
	got, err := read()
	require.NoError(t, err)
	require.Equal(t, *args, got)
	require.False(t, timed, "a frame read whole from the buffer got a deadline")

	// Idle for longer than the frame timeout, then a frame in two parts
	// within it: no deadline may be left over from the first frame.
	go func() {
		time.Sleep(2 * timeout)
		_, _ = cconn.Write(frame[:7])
		time.Sleep(timeout / 4)
		_, _ = cconn.Write(frame[7:])
	}()
	got, err = read()
	require.NoError(t, err)
	require.Equal(t, *args, got)
	require.True(t, timed, "a frame that arrived in parts got no deadline")
	require.False(t, sc.timed, "the deadline was not cleared once the frame was read")

	// Half a frame and then nothing: the read fails at the frame timeout.
	_, err = cconn.Write(frame[:len(frame)/2])
	require.NoError(t, err)
	start := time.Now()
	stop := time.AfterFunc(10*timeout, func() { _ = sconn.Close() }) // a read with no deadline ends too
	defer stop.Stop()
	_, err = read()
	require.Error(t, err)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout(), "%v", err)
	require.Less(t, time.Since(start), 10*timeout)
}

// TestFrameBuffered: a frame counts as buffered only once all of it is,
// and a frame whose length claims less than its header only once its
// header is (a short frame's header is still read whole).
func TestFrameBuffered(t *testing.T) {
	frame := requestFrame(7, &BatchArgs{Ops: []Op{{Code: OpGet, Key: "key"}}})
	short := []byte{2, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9} // length 2, then 9 bytes
	for _, tc := range []struct {
		name  string
		frame []byte
		whole int // bytes buffered from which the frame counts as buffered
	}{{"frame", frame, len(frame)}, {"short frame", short, 4 + reqHeaderBytes}} {
		for n := 0; n <= len(tc.frame)+3; n++ {
			in := append(slices.Clip(tc.frame[:min(n, len(tc.frame))]), make([]byte, max(0, n-len(tc.frame)))...)
			r := bufio.NewReader(bytes.NewReader(in))
			_, _ = r.Peek(len(in))
			require.Equal(t, n >= tc.whole, frameBuffered(r), "%s: %d of %d bytes buffered", tc.name, n, len(tc.frame))
		}
	}
}
