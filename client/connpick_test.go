package client_test

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/wire"
)

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// TestLoneCallerKeepsToOneConnection: with two connections per server, a
// caller making one call at a time opens and uses one of them; callers
// with calls in flight together open the second.
func TestLoneCallerKeepsToOneConnection(t *testing.T) {
	ln := &countingListener{Listener: listen(t, "127.0.0.1:0")}
	addr := ln.Addr().String()
	serve(t, ln, []string{addr})
	cl, err := client.New(client.Config{Servers: []string{addr}, ConnsPerServer: 2})
	require.NoError(t, err)
	defer cl.Close()
	ctx := context.Background()
	for i := 0; i < 200; i++ {
		_, err := cl.Do(ctx, []wire.Op{{Code: wire.OpPut, Key: "k", Value: "v"}})
		require.NoError(t, err)
	}
	require.EqualValues(t, 1, ln.accepted.Load(), "a lone caller opened more than one connection")

	deadline := time.Now().Add(10 * time.Second)
	for ln.accepted.Load() < 2 && time.Now().Before(deadline) {
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 50; i++ {
					_, _ = cl.Do(ctx, []wire.Op{{Code: wire.OpGet, Key: "k"}})
				}
			}()
		}
		wg.Wait()
	}
	require.EqualValues(t, 2, ln.accepted.Load(), "concurrent callers did not spread to the second connection")
}

// TestLoneCallsAreTimedBothWays: a lone caller's calls are timed both
// ways (Config.LonePoll), and reported in Health; with LonePoll negative
// they never poll, and a batch of more than LoneOps ops is not timed.
func TestLoneCallsAreTimedBothWays(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("sockets poll on Linux only (package internal/rawsock)")
	}
	ln := listen(t, "127.0.0.1:0")
	addr := ln.Addr().String()
	serve(t, ln, []string{addr})
	ctx := context.Background()
	big := make([]wire.Op, client.LoneOps+1)
	for i := range big {
		big[i] = wire.Op{Code: wire.OpPut, Key: fmt.Sprint("k", i), Value: "v"}
	}
	for _, lonePoll := range []time.Duration{0, -1} {
		cl, err := client.New(client.Config{Servers: []string{addr}, LonePoll: lonePoll})
		require.NoError(t, err)
		_, err = cl.Do(ctx, big)
		require.NoError(t, err)
		h := cl.Health()[0]
		require.Zero(t, h.LoneSlept+h.LonePolled, "a batch of %d ops was timed", len(big))
		for range 100 {
			_, err := cl.Do(ctx, []wire.Op{{Code: wire.OpPut, Key: "k", Value: "v"}})
			require.NoError(t, err)
		}
		h = cl.Health()[0]
		require.Positive(t, h.LoneSlept, "LonePoll %v", lonePoll)
		if lonePoll < 0 {
			require.Zero(t, h.LonePolled, "a call polled with LonePoll %v", lonePoll)
		} else {
			require.Positive(t, h.LonePolled)
		}
		require.NoError(t, cl.Close())
	}
}

// TestLonePollOverItsBoundIsRefused: a LonePoll over MaxLonePoll is an
// error, not a client that polls for it.
func TestLonePollOverItsBoundIsRefused(t *testing.T) {
	_, err := client.New(client.Config{Servers: []string{"127.0.0.1:1"}, LonePoll: client.MaxLonePoll + 1})
	require.ErrorContains(t, err, "LonePoll")
	cl, err := client.New(client.Config{Servers: []string{"127.0.0.1:1"}, LonePoll: client.MaxLonePoll})
	require.NoError(t, err)
	require.NoError(t, cl.Close())
}
