package client_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/kvs"
)

// longLinger is a linger no op in these tests may wait for: each test
// finishes in a small part of it unless ops wait for the linger timer.
const longLinger = 5 * time.Second

// lingeringClient starts one server and returns it with a client of it
// whose ops may linger for longLinger.
func lingeringClient(t *testing.T) (*kvs.Server, *client.Client) {
	ln := listen(t, "127.0.0.1:0")
	srv := serve(t, ln, []string{ln.Addr().String()})
	cl, err := client.New(client.Config{Servers: []string{ln.Addr().String()}, Linger: longLinger})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })
	return srv, cl
}

// TestLoneOpSentAtOnce: a caller alone with its server waits for no linger:
// its Put and Get go at once, one batch each.
func TestLoneOpSentAtOnce(t *testing.T) {
	srv, cl := lingeringClient(t)
	ctx := context.Background()

	before := srv.Stats().BatchCount()
	start := time.Now()
	for i := range 20 {
		k := fmt.Sprintf("lone%d", i)
		require.NoError(t, cl.Put(ctx, k, "v"))
		v, err := cl.Get(ctx, k)
		require.NoError(t, err)
		require.Equal(t, "v", v)
	}
	require.Less(t, time.Since(start), longLinger/5, "lone ops waited for the linger")
	require.Equal(t, uint64(40), srv.Stats().BatchCount()-before, "one batch per lone op")
}

// TestOpsBehindABatchGoWhenItIsAnswered: ops that arrive while a batch is
// in flight coalesce, and go when it is answered, not after the linger;
// the batches are fewer than the ops.
func TestOpsBehindABatchGoWhenItIsAnswered(t *testing.T) {
	srv, cl := lingeringClient(t)
	ctx := context.Background()

	const callers, each = 32, 50
	before := srv.Stats().BatchCount()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for c := range callers {
		wg.Go(func() {
			for i := range each {
				if err := cl.Put(ctx, fmt.Sprintf("c%d-%d", c, i), "v"); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Less(t, time.Since(start), longLinger/5, "ops behind a batch in flight waited for the linger")
	batches := srv.Stats().BatchCount() - before
	t.Logf("%d ops from %d callers in %d batches", callers*each, callers, batches)
	require.Less(t, batches, uint64(callers*each), "concurrent callers' ops did not coalesce")
	for c := range callers {
		v, err := cl.Get(ctx, fmt.Sprintf("c%d-%d", c, each-1))
		require.NoError(t, err)
		require.Equal(t, "v", v)
	}
}

// TestLoneOpHonoursItsContext: a lone op sent from its caller's goroutine
// still returns when the caller's context ends.
func TestLoneOpHonoursItsContext(t *testing.T) {
	ln := listen(t, "127.0.0.1:0")
	// A listener that accepts and never answers.
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	cl, err := client.New(client.Config{Servers: []string{ln.Addr().String()}, Linger: longLinger})
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = cl.Get(ctx, "k")
	require.Error(t, err)
	require.Less(t, time.Since(start), 2*time.Second, "a lone op outlived its caller's context")
}

// TestLargeValuesCoalesceWithinTheLimits: concurrent Puts and Gets of 1
// MiB values, each within the limits alone, succeed when they coalesce:
// no batch over wire.MaxFrameBytes, and no get answered TooLarge because
// other callers' gets took the values a batch may read.
func TestLargeValuesCoalesceWithinTheLimits(t *testing.T) {
	_, cl := lingeringClient(t)
	const callers = 100
	value := strings.Repeat("v", 1<<20)
	ctx := context.Background()
	concurrently(t, callers, func(c int) error { return cl.Put(ctx, fmt.Sprintf("big%d", c), value) })
	concurrently(t, callers, func(c int) error {
		v, err := cl.Get(ctx, fmt.Sprintf("big%d", c))
		if err == nil && v != value {
			err = fmt.Errorf("got %d bytes, want %d", len(v), len(value))
		}
		return err
	})
}
