package muxconn

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/rpc"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/internal/busypoll"
	"github.com/batchkv/batchkv/internal/rawsock"
	"github.com/batchkv/batchkv/wire"
)

// echoServer serves the binary protocol on a real TCP listener: each
// request is answered, after hold(key of its first op) returns, with one
// result per op whose value is the op's key. Replies go out in the order
// the holds end, so callers' replies cross.
func echoServer(t *testing.T, hold func(key string)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = conn.Close() })
			go serveEcho(conn, hold)
		}
	}()
	return ln.Addr().String()
}

func serveEcho(conn net.Conn, hold func(string)) {
	pre := make([]byte, len(wire.Preamble))
	if _, err := io.ReadFull(conn, pre); err != nil {
		return
	}
	codec := wire.NewServerCodec(conn, nil, 0)
	var writing sync.Mutex
	for {
		var req rpc.Request
		if err := codec.ReadRequestHeader(&req); err != nil {
			return
		}
		var args wire.BatchArgs
		if err := codec.ReadRequestBody(&args); err != nil {
			return
		}
		go func() {
			hold(args.Ops[0].Key)
			reply := wire.BatchReply{Results: make([]wire.Result, len(args.Ops))}
			for i, op := range args.Ops {
				reply.Results[i] = wire.Result{Status: wire.StatusOK, Value: op.Key}
			}
			writing.Lock()
			defer writing.Unlock()
			_ = codec.WriteResponse(&rpc.Response{ServiceMethod: req.ServiceMethod, Seq: req.Seq}, &reply)
		}()
	}
}

func dialMux(t *testing.T, addr string) *Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	codec, err := wire.NewClientCodec(conn)
	require.NoError(t, err)
	mc := New(conn, codec, nil)
	t.Cleanup(func() { _ = mc.Close() })
	return mc
}

func getOne(ctx context.Context, mc *Conn, key string) (string, error) {
	var reply wire.BatchReply
	err := mc.Call(ctx, &wire.BatchArgs{Ops: []wire.Op{{Code: wire.OpGet, Key: key}}}, &reply, false)
	if err != nil {
		return "", err
	}
	return reply.Results[0].Value, nil
}

// TestMuxConnCallersGetTheirOwnReplies: 16 callers on one connection,
// whose replies the server sends in a shuffled order, each get the reply
// to their own request, whoever of them reads it.
func TestMuxConnCallersGetTheirOwnReplies(t *testing.T) {
	addr := echoServer(t, func(string) { time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond) })
	mc := dialMux(t, addr)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Go(func() {
			for i := range 200 {
				key := strconv.Itoa(g) + "/" + strconv.Itoa(i)
				v, err := getOne(t.Context(), mc, key)
				if err == nil && v != key {
					err = &mismatch{key, v}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	waitNoErrors(t, &wg, errs)
}

// TestMuxConnGivenUpCallsAreNotReused: calls given up at random moments
// (their context ends while the reply may be on its way, or being read)
// mixed with calls that wait: every call that returns a reply has its
// own. A call is kept for reuse only once answered; one kept when given
// up could be answered into the reply of the call that reused it.
func TestMuxConnGivenUpCallsAreNotReused(t *testing.T) {
	addr := echoServer(t, func(string) { time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond) })
	mc := dialMux(t, addr)
	var wg sync.WaitGroup
	var answered, givenUp atomic.Int64
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 300 {
				key := strconv.Itoa(g) + "/" + strconv.Itoa(i)
				ctx, cancel := context.WithTimeout(t.Context(), time.Duration(rand.IntN(400))*time.Microsecond)
				if g%2 == 0 {
					ctx, cancel = context.WithCancel(t.Context())
				}
				v, err := getOne(ctx, mc, key)
				cancel()
				switch {
				case err == nil && v != key:
					errs <- &mismatch{key, v}
					return
				case err == nil:
					answered.Add(1)
				case errors.Is(err, context.DeadlineExceeded):
					givenUp.Add(1)
				default:
					errs <- err
					return
				}
			}
		})
	}
	waitNoErrors(t, &wg, errs)
	t.Logf("%d calls answered, %d given up", answered.Load(), givenUp.Load())
	require.Positive(t, givenUp.Load(), "no call was given up: the test tried nothing")
}

// TestMuxConnKeepsOnlyAnsweredCalls: a call given up (its context ended
// before its reply came) is never handed to a later call, which its late
// reply could be written into; an answered one is kept for reuse.
func TestMuxConnKeepsOnlyAnsweredCalls(t *testing.T) {
	release := make(chan struct{})
	addr := echoServer(t, func(key string) {
		switch key {
		case "held":
			<-release
		case "slow":
			time.Sleep(10 * time.Millisecond)
		}
	})
	defer close(release)
	mc := dialMux(t, addr)
	pendingOf := func() *pendingCall {
		mc.mu.Lock()
		defer mc.mu.Unlock()
		for _, pc := range mc.pending {
			return pc
		}
		return nil
	}
	for range 5 {
		ctx, cancel := context.WithCancel(t.Context())
		var givenUp *pendingCall
		time.AfterFunc(20*time.Millisecond, func() { givenUp = pendingOf(); cancel() })
		_, err := getOne(ctx, mc, "held")
		require.ErrorIs(t, err, context.Canceled)
		require.NotNil(t, givenUp)
		var got []*pendingCall
		for range 8 {
			pc := newPendingCall(nil)
			require.NotSame(t, givenUp, pc, "a given-up call was kept for reuse")
			got = append(got, pc)
		}
		for _, pc := range got {
			pc.recycle()
		}
	}

	// An answered call goes back to the pool (which, under the race
	// detector, drops some of what it is given: a few tries).
	kept := false
	for range 20 {
		seen := make(chan *pendingCall, 1)
		time.AfterFunc(2*time.Millisecond, func() { seen <- pendingOf() })
		_, err := getOne(t.Context(), mc, "slow")
		require.NoError(t, err)
		answered := <-seen
		if pc := newPendingCall(nil); pc == answered {
			kept = true
			break
		} else {
			pc.recycle()
		}
	}
	require.True(t, kept, "no answered call was kept for reuse")
}

// TestMuxConnCutReplyEndsItsCall: a server that sends the start of a
// reply and then closes ends the call with an error at once, even under
// a context that cannot end: the call whose body broke off is answered
// with the failure, not left waiting for a reply that will not come.
func TestMuxConnCutReplyEndsItsCall(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		if _, err := io.ReadFull(conn, make([]byte, len(wire.Preamble))); err != nil {
			return
		}
		codec := wire.NewServerCodec(conn, nil, 0)
		var req rpc.Request
		var args wire.BatchArgs
		if codec.ReadRequestHeader(&req) != nil || codec.ReadRequestBody(&args) != nil {
			return
		}
		body := wire.AppendBatchReply(nil, &wire.BatchReply{Results: []wire.Result{{Status: wire.StatusOK, Value: strings.Repeat("v", 100)}}})
		frame := binary.LittleEndian.AppendUint32(nil, uint32(12+len(body)))
		frame = binary.LittleEndian.AppendUint64(frame, req.Seq)
		frame = binary.LittleEndian.AppendUint32(frame, 0) // no error
		frame = append(frame, body[:len(body)/2]...)
		_, _ = conn.Write(frame) // half the body, then the close
	}()
	mc := dialMux(t, ln.Addr().String())
	ended := make(chan error, 1)
	go func() { _, err := getOne(context.Background(), mc, "k"); ended <- err }()
	select {
	case err := <-ended:
		require.Error(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the call whose reply broke off did not end")
	}
}

// waitNoErrors waits for wg's goroutines, then fails on any error they
// sent to errs.
func waitNoErrors(t *testing.T, wg *sync.WaitGroup, errs chan error) {
	t.Helper()
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

type mismatch struct{ want, got string }

func (m *mismatch) Error() string { return "asked for " + m.want + ", got the reply of " + m.got }

// TestMuxConnCanceledReaderLeavesTheStreamInStep: a lone caller reading
// for its own reply gives up when its context ends, at once, and the
// connection stays usable: the late reply is read and dropped by the next
// caller, which gets its own. A caller waiting behind a reader that gives
// up takes the reading over.
func TestMuxConnCanceledReaderLeavesTheStreamInStep(t *testing.T) {
	release, late := make(chan struct{}), make(chan struct{})
	addr := echoServer(t, func(key string) {
		switch key {
		case "held":
			<-release
		case "late":
			<-late
		}
	})
	mc := dialMux(t, addr)

	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := getOne(ctx, mc, "held")
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, time.Since(start), time.Second)

	// A reader and a waiter; the reader gives up, the waiter reads on.
	readerCtx, cancelReader := context.WithCancel(t.Context())
	readerErr := make(chan error, 1)
	go func() { _, err := getOne(readerCtx, mc, "held"); readerErr <- err }()
	time.Sleep(50 * time.Millisecond)
	waiter := make(chan string, 1)
	go func() { v, _ := getOne(t.Context(), mc, "late"); waiter <- v }()
	time.Sleep(50 * time.Millisecond)
	cancelReader()
	require.ErrorIs(t, <-readerErr, context.Canceled)
	close(late) // answered only now: the waiter must read it itself
	select {
	case v := <-waiter:
		require.Equal(t, "late", v)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting caller never got its reply once the reader gave up")
	}
	close(release) // the held replies come now, and are dropped
	for i := range 20 {
		v, err := getOne(t.Context(), mc, "k"+strconv.Itoa(i))
		require.NoError(t, err)
		require.Equal(t, "k"+strconv.Itoa(i), v)
	}
}

// TestMuxConnBrokenConnectionFailsEveryCall: calls waiting on a
// connection that closes all fail, and later calls fail at once.
func TestMuxConnBrokenConnectionFailsEveryCall(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	addr := echoServer(t, func(string) { <-release })
	mc := dialMux(t, addr)
	errs := make(chan error, 4)
	for i := range 4 {
		go func() { _, err := getOne(t.Context(), mc, strconv.Itoa(i)); errs <- err }()
	}
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, mc.Close())
	for range 4 {
		select {
		case err := <-errs:
			require.Error(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("a call on a closed connection never returned")
		}
	}
	_, err := getOne(t.Context(), mc, "later")
	require.Error(t, err)
}

// recordingSpinner is a socket's ReadSpinner that records each spin set;
// with slowOff, it takes that long to turn the spin off.
type recordingSpinner struct {
	sock    rawsock.ReadSpinner
	slowOff time.Duration
	mu      sync.Mutex
	set     []time.Duration
	now     time.Duration // the spin in force
}

func (r *recordingSpinner) SetReadSpin(d time.Duration) {
	if d == 0 {
		time.Sleep(r.slowOff)
	}
	r.mu.Lock()
	r.set = append(r.set, d)
	r.now = d
	r.mu.Unlock()
	r.sock.SetReadSpin(d)
}

// spyConn records the spin in force at each Read.
type spyConn struct {
	net.Conn
	spin *recordingSpinner
	mu   sync.Mutex
	seen []time.Duration
}

func (c *spyConn) Read(p []byte) (int, error) {
	c.spin.mu.Lock()
	now := c.spin.now
	c.spin.mu.Unlock()
	c.mu.Lock()
	c.seen = append(c.seen, now)
	c.mu.Unlock()
	return c.Conn.Read(p)
}

func (r *recordingSpinner) takeSet() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.set
	r.set = nil
	return s
}

// TestMuxConnLoneCallsPoll: a lone call polls its socket for its reply as
// the Policy chooses (polling first, sleeping next), and is timed; a call
// that is not lone neither polls nor is timed.
func TestMuxConnLoneCallsPoll(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("sockets poll on Linux only (package rawsock)")
	}
	addr := echoServer(t, func(string) {})
	raw, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	sock := rawsock.Wrap(raw)
	codec, err := wire.NewClientCodec(sock)
	require.NoError(t, err)
	rec := &recordingSpinner{sock: sock.(rawsock.ReadSpinner)}
	policy := busypoll.New(50 * time.Millisecond)
	mc := New(sock, codec, &Polling{Socket: rec, Policy: policy})
	t.Cleanup(func() { _ = mc.Close() })

	call := func(key string, lone bool) {
		t.Helper()
		var reply wire.BatchReply
		require.NoError(t, mc.Call(t.Context(), &wire.BatchArgs{Ops: []wire.Op{{Code: wire.OpGet, Key: key}}}, &reply, lone))
		require.Equal(t, key, reply.Results[0].Value)
	}
	call("a", false)
	require.Empty(t, rec.takeSet(), "a call that is not lone does not poll")
	slept, polled := policy.Means()
	require.Zero(t, slept)
	require.Zero(t, polled)

	call("b", true)
	require.Equal(t, []time.Duration{50 * time.Millisecond, 0}, rec.takeSet(), "the first lone call polls, and the spin is undone after")
	_, polled = policy.Means()
	require.Positive(t, polled)
	require.Less(t, polled, 5*time.Second)

	call("c", true)
	require.Empty(t, rec.takeSet(), "the second sleeps")
	slept, _ = policy.Means()
	require.Positive(t, slept)
}

// TestMuxConnNextReaderDoesNotPoll: when a lone call that polled gives
// up the reading to a call that waited, the spin is off before that call
// reads, however long turning it off takes.
func TestMuxConnNextReaderDoesNotPoll(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("sockets poll on Linux only (package rawsock)")
	}
	release := map[string]chan struct{}{"lone": make(chan struct{}), "other": make(chan struct{})}
	addr := echoServer(t, func(key string) { <-release[key] })
	raw, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	sock := rawsock.Wrap(raw)
	rec := &recordingSpinner{sock: sock.(rawsock.ReadSpinner), slowOff: 50 * time.Millisecond}
	spy := &spyConn{Conn: sock, spin: rec}
	codec, err := wire.NewClientCodec(spy)
	require.NoError(t, err)
	mc := New(spy, codec, &Polling{Socket: rec, Policy: busypoll.New(time.Millisecond)})
	t.Cleanup(func() { _ = mc.Close() })

	call := func(key string, lone bool) chan error {
		done := make(chan error, 1)
		go func() {
			var reply wire.BatchReply
			done <- mc.Call(context.Background(), &wire.BatchArgs{Ops: []wire.Op{{Code: wire.OpGet, Key: key}}}, &reply, lone)
		}()
		return done
	}
	lone := call("lone", true)
	time.Sleep(20 * time.Millisecond) // the lone call reads, polling first
	other := call("other", false)
	time.Sleep(20 * time.Millisecond) // the other waits for the reading
	close(release["lone"])
	require.NoError(t, <-lone)
	time.Sleep(20 * time.Millisecond) // the other reads, and waits
	close(release["other"])
	require.NoError(t, <-other)

	spy.mu.Lock()
	defer spy.mu.Unlock()
	require.Equal(t, time.Millisecond, spy.seen[0], "the lone call polled")
	require.Equal(t, time.Duration(0), spy.seen[len(spy.seen)-1], "the next reader polled: %v", spy.seen)
}

// TestMuxConnReusedContextIsWatchedOnce: calls made one after another
// under one context that can end allocate no more than calls under
// Background's, which needs no watch: the context's watch (a
// context.AfterFunc) is registered once, not per call. It still ends a
// wait: the context, cancelled during a later call, ends that call.
func TestMuxConnReusedContextIsWatchedOnce(t *testing.T) {
	release := make(chan struct{})
	addr := echoServer(t, func(key string) {
		if key == "held" {
			<-release
		}
	})
	defer close(release)
	mc := dialMux(t, addr)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	allocs := func(ctx context.Context) float64 {
		return testing.AllocsPerRun(200, func() {
			v, err := getOne(ctx, mc, "k")
			require.NoError(t, err)
			require.Equal(t, "k", v)
		})
	}
	background, reused := allocs(context.Background()), allocs(ctx)
	t.Logf("allocations a call: %.1f under Background, %.1f under one reused context", background, reused)
	require.LessOrEqual(t, reused, background+0.5, "a call under a reused context registers a watch of its own")

	time.AfterFunc(50*time.Millisecond, cancel)
	ended := make(chan error, 1)
	go func() { _, err := getOne(ctx, mc, "held"); ended <- err }()
	select {
	case err := <-ended:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("the reused context ended, and the call waiting under it did not")
	}
}

// TestMuxConnWatchKeptOnlyForAReusedContext: a call under a context made
// for it alone leaves no watch behind (the context, cancelled after the
// call, must not find one to run); the second of two calls under one
// context keeps its watch for the calls that follow.
func TestMuxConnWatchKeptOnlyForAReusedContext(t *testing.T) {
	addr := echoServer(t, func(string) {})
	mc := dialMux(t, addr)
	watched := func() <-chan struct{} {
		mc.mu.Lock()
		defer mc.mu.Unlock()
		return mc.watchedDone
	}
	for i := range 3 {
		ctx, cancel := context.WithCancel(t.Context())
		_, err := getOne(ctx, mc, "k")
		cancel()
		require.NoError(t, err)
		require.Nil(t, watched(), "call %d: a watch left on a context made for one call", i)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for i := range 3 {
		_, err := getOne(ctx, mc, "k")
		require.NoError(t, err)
		if i == 0 {
			require.Nil(t, watched(), "kept after the first call under the context")
		} else {
			require.Equal(t, ctx.Done(), watched(), "not kept after call %d under one context", i+1)
		}
	}
}
