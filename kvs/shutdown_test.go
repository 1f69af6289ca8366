package kvs_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCloseUnderStalledAttack: Close ends a server promptly while peers
// that never read hold it over its reply budget, with the batches they
// pipelined behind waiting for that budget, and it reads none of those
// batches' values: once the connections are closed no reply can be
// written. 8 connections each pipeline 6 batches of 62 gets of a 1 MiB
// value against a 16 MiB budget (stalledPeers, the stall timeout a
// minute), in which a batch reads 8 MiB; two batches proceed and 46
// wait. Were they let through to read on Close, they would allocate
// about 368 MiB on the way out (and a server under thousands of such
// connections would take minutes to stop).
func TestCloseUnderStalledAttack(t *testing.T) {
	srv, _, closePeers := stalledPeers(t, time.Minute, 6)
	defer closePeers()
	// Every batch pipelined has reached the store's door: the 46 not
	// served wait for budget.
	require.Eventually(t, func() bool { return srv.Stats().BatchedOps.Load() == 2+8*6*62 }, 10*time.Second, 5*time.Millisecond,
		"the server did not take up every batch pipelined: %d ops", srv.Stats().BatchedOps.Load())
	time.Sleep(50 * time.Millisecond)

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	require.NoError(t, srv.Close())
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("Close took %v and allocated %.1f MiB", took, float64(allocated)/(1<<20))
	require.Less(t, took, 5*time.Second)
	require.Less(t, allocated, uint64(32<<20), "the waiting batches read their values on the way out")
}
