package client_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/wire"
)

// serve starts a real server on ln, part of the cluster peers.
func serve(t *testing.T, ln net.Listener, peers []string) *kvs.Server {
	t.Helper()
	srv, err := kvs.New(kvs.Config{Peers: peers, Self: ln.Addr().String(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	return ln
}

// keyOn returns a key that cl routes to server s.
func keyOn(t *testing.T, cl *client.Client, s int) string {
	t.Helper()
	for i := 0; ; i++ {
		if k := "key" + strconv.Itoa(i); cl.Ring().Owner(k) == s {
			return k
		}
	}
}

// TestDownServerFailsFastAndComesBack: with one replica per key, a server
// that goes down takes its keys with it, but only those: the other server
// keeps serving. After FailureThreshold failures the down server's ops fail
// at once, saying it is marked unhealthy; when a server is back at its
// address, the next probe finds it and its keys serve again.
func TestDownServerFailsFastAndComesBack(t *testing.T) {
	lnA, lnB := listen(t, "127.0.0.1:0"), listen(t, "127.0.0.1:0")
	peers := []string{lnA.Addr().String(), lnB.Addr().String()}
	serve(t, lnA, peers)
	b := serve(t, lnB, peers)
	cl, err := client.New(client.Config{Servers: peers, Cooldown: 100 * time.Millisecond, MaxCooldown: 200 * time.Millisecond})
	require.NoError(t, err)
	defer cl.Close()
	ctx := context.Background()
	keyA, keyB := keyOn(t, cl, 0), keyOn(t, cl, 1)
	require.NoError(t, cl.Put(ctx, keyA, "a"))
	require.NoError(t, cl.Put(ctx, keyB, "b"))

	require.NoError(t, b.Close())
	for range 3 {
		_, err := cl.Get(ctx, keyB)
		require.ErrorIs(t, err, client.ErrUnavailable)
	}
	h := cl.Health()
	require.True(t, h[0].Healthy)
	require.False(t, h[1].Healthy)
	start := time.Now()
	_, err = cl.Get(ctx, keyB)
	require.ErrorIs(t, err, client.ErrUnavailable)
	require.ErrorContains(t, err, "marked unhealthy after 3 consecutive failures")
	require.Less(t, time.Since(start), 50*time.Millisecond, "an unhealthy server's ops fail at once")

	// The other server's keys are unaffected, alone or in a mixed batch.
	v, err := cl.Get(ctx, keyA)
	require.NoError(t, err)
	require.Equal(t, "a", v)
	res, err := cl.Do(ctx, []wire.Op{{Code: wire.OpGet, Key: keyA}, {Code: wire.OpGet, Key: keyB}})
	require.ErrorIs(t, err, client.ErrUnavailable)
	require.Equal(t, wire.Result{Status: wire.StatusOK, Value: "a"}, res[0])
	require.Equal(t, wire.StatusUnavail, res[1].Status)

	// Back at the same address (empty: one replica, no durability). The
	// first call after the cooldown is the probe.
	serve(t, listen(t, peers[1]), peers)
	require.Eventually(t, func() bool {
		return cl.Put(ctx, keyB, "b2") == nil
	}, 3*time.Second, 20*time.Millisecond)
	require.True(t, cl.Health()[1].Healthy)
	v, err = cl.Get(ctx, keyB)
	require.NoError(t, err)
	require.Equal(t, "b2", v)
}

// TestHungServerMarkedUnhealthy: a server that accepts connections but
// never answers costs each call its deadline until it is marked
// unhealthy; from then on its ops fail at once.
func TestHungServerMarkedUnhealthy(t *testing.T) {
	ln := listen(t, "127.0.0.1:0")
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c); _ = c.Close() }()
		}
	}()
	cl, err := client.New(client.Config{Servers: []string{ln.Addr().String()}, Cooldown: time.Minute})
	require.NoError(t, err)
	defer cl.Close()
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_, err := cl.Do(ctx, []wire.Op{{Code: wire.OpGet, Key: "k"}})
		cancel()
		require.ErrorIs(t, err, client.ErrUnavailable)
		require.ErrorContains(t, err, "no reply before the deadline")
	}
	start := time.Now()
	_, err = cl.Do(context.Background(), []wire.Op{{Code: wire.OpGet, Key: "k"}})
	require.ErrorContains(t, err, "marked unhealthy")
	require.Less(t, time.Since(start), 50*time.Millisecond)
	require.Greater(t, cl.Health()[0].RetryIn, 50*time.Second)
}

// TestLoneGetBoundedByBatchTimeout: a Get with a context that never ends,
// to a server that never answers, fails after about Config.BatchTimeout
// (which the client bounds without a timer of its own per call).
func TestLoneGetBoundedByBatchTimeout(t *testing.T) {
	ln := listen(t, "127.0.0.1:0")
	defer ln.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
			go func() { _, _ = io.Copy(io.Discard, c); _ = c.Close() }()
		}
	}()
	const timeout = 400 * time.Millisecond
	cl, err := client.New(client.Config{Servers: []string{ln.Addr().String()}, BatchTimeout: timeout})
	require.NoError(t, err)
	defer cl.Close()
	for range 2 {
		start := time.Now()
		done := make(chan error, 1)
		go func() { _, err := cl.Get(context.Background(), "k"); done <- err }()
		select {
		case err := <-done:
			require.ErrorIs(t, err, client.ErrUnavailable)
			took := time.Since(start)
			require.GreaterOrEqual(t, took, timeout-timeout/16)
			require.Less(t, took, 3*timeout)
		case <-time.After(10 * timeout):
			for len(accepted) > 0 { // so that the Get and Close end
				_ = (<-accepted).Close()
			}
			t.Fatalf("a Get to a silent server still waits after %v; BatchTimeout %v", 10*timeout, timeout)
		}
	}
}
