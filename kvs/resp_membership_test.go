package kvs_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRESPFollowsShardMoves: a Redis client keeps writing and reading
// through one server while a fourth server is added (shards move onto it)
// and the first is removed (shards move off it). The moves are never
// exposed to it: no command fails, and every write reads back.
func TestRESPFollowsShardMoves(t *testing.T) {
	if testing.Short() {
		t.Skip("moves shards under a RESP load for about 10s")
	}
	c := membershipClusterRF(t, 3)
	rc := redisClient(t, c.Addrs()[1], 2, nil)
	ctx := t.Context()
	var (
		mu      sync.Mutex
		errs    []error
		written atomic.Int64
		stop    = make(chan struct{})
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			key, val := fmt.Sprintf("r%d", i), fmt.Sprintf("v%d", i)
			err := rc.Set(ctx, key, val, 0).Err()
			if err == nil {
				var got string
				got, err = rc.Get(ctx, key).Result()
				if err == nil && got != val {
					err = fmt.Errorf("GET %s = %q, want %q", key, got, val)
				}
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("op %d: %w", i, err))
				mu.Unlock()
				continue
			}
			written.Store(int64(i + 1))
		}
	}()
	time.Sleep(300 * time.Millisecond)
	drv := c.Driver(t, nil)
	c.Start(3)
	sum, err := drv.AddServer(c.Addrs()[3])
	require.NoError(t, err)
	require.NotEmpty(t, sum.Moves, "the new server took no replica")
	before := written.Load()
	_, err = drv.RemoveServer(c.Addrs()[0])
	require.NoError(t, err)
	c.Stop(0)
	time.Sleep(300 * time.Millisecond)
	close(stop)
	<-done
	n := written.Load()
	t.Logf("%d keys written through RESP (%d before the removal), %d moves in the add", n, before, len(sum.Moves))
	mu.Lock()
	require.Empty(t, errs, "the Redis client saw errors during the moves")
	mu.Unlock()
	require.Greater(t, n, before, "no write was answered during the removal")
	vals, err := rc.MGet(ctx, func() []string {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("r%d", i)
		}
		return keys
	}()...).Result()
	require.NoError(t, err)
	for i, v := range vals {
		require.Equal(t, fmt.Sprintf("v%d", i), v, "key r%d", i)
	}
}
