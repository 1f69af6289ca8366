package client

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/semaphore"

	"github.com/batchkv/batchkv/internal/netcount"
	"github.com/batchkv/batchkv/wire"
)

// TestReplicatedWindowBoundsBytesInFlight: requests to a server that
// reads and never answers (a leader whose queue is long) stop at the
// window: 64 MiB of requests put at most replicatedWindow on the wire,
// and those that wait are not timed. With the window planted as
// unbounded, all 64 MiB go.
func TestReplicatedWindowBoundsBytesInFlight(t *testing.T) {
	const request = 4 * wire.MaxValueBytes
	sent := sentToSilentServer(t, semaphore.NewWeighted(replicatedWindow), 16, request)
	t.Logf("window: %d MiB on the wire", sent>>20)
	require.LessOrEqual(t, sent, int64(replicatedWindow+request/2), "more than the window went out")
	require.GreaterOrEqual(t, sent, int64(replicatedWindow-request), "the window let less than its size go")

	sent = sentToSilentServer(t, semaphore.NewWeighted(1<<40), 16, request)
	t.Logf("planted, no window: %d MiB on the wire", sent>>20)
	require.Greater(t, sent, int64(replicatedWindow+request), "the check cannot tell a missing window")
}

// sentToSilentServer makes calls concurrent requests of about size bytes
// each to a server that reads everything and answers nothing, through a
// serverConn with the given window, and returns the bytes the server has
// read once they stop coming.
func sentToSilentServer(t *testing.T, window *semaphore.Weighted, calls, size int) int64 {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var read, written atomic.Uint64
	var conns sync.WaitGroup
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				_, _ = io.Copy(io.Discard, &netcount.Conn{Conn: c, In: &read, Out: &written})
				_ = c.Close()
			}()
		}
	}()

	cfg := Config{Servers: []string{ln.Addr().String()}}
	require.NoError(t, cfg.validate())
	s := newServerConn(ln.Addr().String(), &cfg, new(traffic))
	s.window = window
	ctx, cancel := context.WithCancel(context.Background())
	long := func(ctx context.Context) (context.Context, context.CancelFunc) {
		return context.WithTimeout(ctx, time.Minute)
	}
	var callers sync.WaitGroup
	value := strings.Repeat("v", wire.MaxValueBytes)
	for i := range calls {
		ops := make([]wire.Op, size/wire.MaxValueBytes)
		for j := range ops {
			ops[j] = wire.Op{Code: wire.OpPut, Key: fmt.Sprintf("k%d-%d", i, j), Value: value}
		}
		room := min(int64(wire.BatchArgsBound(ops)), replicatedWindow)
		callers.Add(1)
		go func() {
			defer callers.Done()
			var reply wire.BatchReply
			_, _ = s.callInWindow(ctx, room, long, &wire.BatchArgs{Shard: 0, Session: 1, Seq: uint64(i + 1), Ops: ops}, &reply)
		}()
	}
	// Wait until the bytes stop coming (a 200 ms lull), at most 20 s.
	last, still := int64(-1), 0
	for deadline := time.Now().Add(20 * time.Second); still < 4 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		if n := int64(read.Load()); n == last && n > 0 {
			still++
		} else {
			last, still = n, 0
		}
	}
	cancel()
	callers.Wait()
	s.close()
	_ = ln.Close()
	conns.Wait()
	return last
}
