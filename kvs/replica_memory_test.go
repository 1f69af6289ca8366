package kvs_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/internal/clustertest"
	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/wire"
)

// smallStores is the stores' limit of the third server of
// TestFollowerStoresStayNearTheirLimit; the other two have none.
const smallStores = 32 << 20

// TestFollowerStoresStayNearTheirLimit: in a cluster of three at RF=3
// whose third server's stores may hold 32 MiB and the others' any
// amount, puts of 16 KiB values at 6 MB/s go on until refused. They are
// refused with StatusNoMemory before the small server's stores pass
// their limit by a quarter; every put acknowledged reads back, and once the keys are
// deleted puts are taken again. Planted (leaders ignore what their peers
// say of their stores, as before): the small server applies what the
// others' leaders commit, past its limit by that quarter.
func TestFollowerStoresStayNearTheirLimit(t *testing.T) {
	fill := fillSmallFollower(t, false, 40*time.Millisecond)
	t.Logf("small server's stores peaked at %.1f MiB of %d; %d puts acknowledged, %d refused",
		float64(fill.peak)/(1<<20), smallStores>>20, len(fill.acked), fill.noMemory)
	require.Positive(t, fill.noMemory, "no put refused")
	require.LessOrEqual(t, fill.peak, uint64(smallStores+smallStores/4), "the small server's stores passed their limit by a quarter")
	require.GreaterOrEqual(t, fill.peak, uint64(smallStores/2), "puts refused long before the limit")

	planted := fillSmallFollower(t, true, 0)
	t.Logf("planted: small server's stores peaked at %.1f MiB", float64(planted.peak)/(1<<20))
	require.Greater(t, planted.peak, uint64(smallStores+smallStores/4), "the check missed the planted bug")
}

// smallFill is what one fill of the cluster did.
type smallFill struct {
	acked    map[string]string // key -> value acknowledged
	noMemory int               // puts answered StatusNoMemory
	peak     uint64            // the small server's stores at their most
}

// fillSmallFollower starts the cluster, plants the bug or not, sends 2x
// smallStores of puts in batches of 16 a pace apart, and checks that
// every put acknowledged reads back. Unplanted, it then deletes them and
// waits for a put to be taken.
func fillSmallFollower(t *testing.T, plant bool, pace time.Duration) smallFill {
	c := clustertest.New(t, 3, 3, 3, clustertest.WithConfig(func(i int, cfg *kvs.Config) {
		if i == 2 {
			kvs.SetStoreLimitForTest(cfg, smallStores)
		}
	}))
	for i := range 3 {
		kvs.SetIgnorePeerStoresForTest(c.Server(i), plant)
	}
	c.WaitLeaders()
	cl := c.Client(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	var peak uint64
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() { // the small server's stores, every 50 ms
		defer wg.Done()
		for {
			if st, err := c.Admin().Status(c.Addrs()[2], wire.StatusRequest{DiskOnly: true}, time.Second); err == nil && st.Stores != nil {
				peak = max(peak, st.Stores.Bytes)
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()

	f := smallFill{acked: map[string]string{}}
	value := strings.Repeat("v", 16<<10)
	const perBatch = 16
	refusedAt := -1 // the first batch with a put refused
	for b := range 2 * smallStores / (16 << 10) / perBatch {
		if pace > 0 && refusedAt >= 0 && b > refusedAt+64 {
			break // more than two seconds of refusals
		}
		ops := make([]wire.Op, perBatch)
		for i := range ops {
			ops[i] = wire.Op{Code: wire.OpPut, Key: fmt.Sprintf("m%05d", b*perBatch+i), Value: fmt.Sprint(b) + value}
		}
		res, err := cl.Do(ctx, ops)
		require.NoError(t, err)
		for i, r := range res {
			switch r.Status {
			case wire.StatusOK:
				f.acked[ops[i].Key] = ops[i].Value
			case wire.StatusUnknown:
				// Not acknowledged (an apply's timeout, under load): it
				// may read back or not.
			case wire.StatusNoMemory:
				f.noMemory++
				if refusedAt < 0 {
					refusedAt = b
				}
			default:
				t.Fatalf("put %s: %v", ops[i].Key, r.Status)
			}
		}
		time.Sleep(pace)
	}
	time.Sleep(time.Second) // the small server applies what it was sent
	close(done)
	wg.Wait()
	f.peak = peak

	var gets, dels []wire.Op
	for k := range f.acked {
		gets = append(gets, wire.Op{Code: wire.OpGet, Key: k})
		dels = append(dels, wire.Op{Code: wire.OpDelete, Key: k})
	}
	for part := range slices.Chunk(gets, 64) { // 1 MiB of values a reply
		res, err := cl.Do(ctx, part)
		require.NoError(t, err)
		for i, r := range res {
			require.Equal(t, wire.StatusOK, r.Status, "key %s", part[i].Key)
			require.Equal(t, f.acked[part[i].Key], r.Value, "key %s", part[i].Key)
		}
	}
	if plant {
		return f
	}
	res, err := cl.Do(ctx, dels)
	require.NoError(t, err)
	for i, r := range res {
		require.Equal(t, wire.StatusOK, r.Status, "delete %s", dels[i].Key)
	}
	require.Eventually(t, func() bool { return cl.Put(ctx, "after", value) == nil }, 20*time.Second, 250*time.Millisecond,
		"puts refused after every key was deleted")
	return f
}
