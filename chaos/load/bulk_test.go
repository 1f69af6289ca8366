package load

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/wire"
)

// newTestBulk returns a one-worker bulk load of four keys, without a
// client: its checks are fed answers by hand.
func newTestBulk() (*Bulk, *bulkWorker) {
	b := NewBulk(BulkConfig{Goroutines: 1, Batch: 4, Keys: 4, Reads: 0.5, ValueSize: 16}, nil, nil, 1, &Violations{})
	return b, b.ws[0]
}

// put feeds the answer st to write idx of slot's key.
func put(b *Bulk, w *bulkWorker, slot int, idx int64, st wire.Status) {
	b.check(w, slot, wire.Op{Code: wire.OpPut, Key: w.names[slot], Value: b.value(w.id, idx)}, wire.Result{Status: st}, nil)
}

// get feeds the answer to a read of slot's key that found write idx, or
// nothing.
func get(b *Bulk, w *bulkWorker, slot int, found bool, idx int64) {
	r := wire.Result{Status: wire.StatusNotFound}
	if found {
		r = wire.Result{Status: wire.StatusOK, Value: b.value(w.id, idx)}
	}
	b.check(w, slot, wire.Op{Code: wire.OpGet, Key: w.names[slot]}, r, nil)
}

// TestBulkCheckCatchesStaleAndLostReads: a get must return the last
// acknowledged write of its key; an older write (a stale read), nothing
// (a lost write) or a value nobody wrote is a violation.
func TestBulkCheckCatchesStaleAndLostReads(t *testing.T) {
	b, w := newTestBulk()
	get(b, w, 0, false, 0) // nothing written yet: right
	put(b, w, 0, 1, wire.StatusOK)
	get(b, w, 0, true, 1)
	require.Zero(t, b.v.Count())
	put(b, w, 0, 2, wire.StatusOK)
	get(b, w, 0, true, 1) // stale
	require.Equal(t, 1, b.v.Count())
	get(b, w, 0, false, 0) // lost
	require.Equal(t, 2, b.v.Count())
	b.check(w, 0, wire.Op{Code: wire.OpGet, Key: w.names[0]}, wire.Result{Status: wire.StatusOK, Value: "junk"}, nil)
	require.Equal(t, 3, b.v.Count())
}

// TestBulkFinalAllowsOnlyAckedOrUnknown: a key with a write of unknown
// outcome may end with that write or the last acknowledged one, nothing
// older; a key with no such write must end with its last write.
func TestBulkFinalAllowsOnlyAckedOrUnknown(t *testing.T) {
	b, w := newTestBulk()
	put(b, w, 0, 1, wire.StatusOK)
	put(b, w, 0, 2, wire.StatusOK)
	put(b, w, 0, 3, wire.StatusUnknown)
	require.True(t, w.keys[0].tainted)
	ok := func(idx int64) wire.Result { return wire.Result{Status: wire.StatusOK, Value: b.value(w.id, idx)} }
	b.final(w, 0, ok(2))
	b.final(w, 0, ok(3))
	require.Zero(t, b.v.Count())
	b.final(w, 0, ok(1)) // an overwritten value came back
	require.Equal(t, 1, b.v.Count())
	b.final(w, 0, wire.Result{Status: wire.StatusNotFound})
	require.Equal(t, 2, b.v.Count())

	put(b, w, 1, 4, wire.StatusOK)
	b.final(w, 1, ok(4))
	require.Equal(t, 2, b.v.Count())
	b.final(w, 1, wire.Result{Status: wire.StatusNotFound}) // lost
	require.Equal(t, 3, b.v.Count())
}

// TestPaceSchedulesBatchesWithoutWaiting: an open load's batches fall due
// on a fixed schedule, whether anyone takes them or not, so a goroutine
// that comes late gets a due time in the past (its latency counts the
// wait); returning to the closed load frees a goroutine waiting on the
// schedule.
func TestPaceSchedulesBatchesWithoutWaiting(t *testing.T) {
	b, _ := newTestBulk() // 4 ops a batch
	stop := make(chan struct{})
	require.Zero(t, b.Pace(400)) // a batch every 10 ms
	start := time.Now()
	time.Sleep(200 * time.Millisecond)
	var dues []time.Time
	for range 10 {
		due, ok := b.nextDue(stop)
		require.True(t, ok)
		dues = append(dues, due)
	}
	require.Less(t, dues[0].Sub(start), 50*time.Millisecond, "the first batch fell due long before it was taken")
	for i := 1; i < len(dues); i++ {
		require.Equal(t, 10*time.Millisecond, dues[i].Sub(dues[i-1]), "batches fall due every 10 ms")
	}

	waiting := make(chan time.Time)
	require.Zero(t, b.Pace(1e-6), "nothing fell behind a backlog this large") // a batch every 4 million seconds
	go func() {
		due, _ := b.nextDue(stop)
		waiting <- due
	}()
	time.Sleep(50 * time.Millisecond)
	b.Pace(0)
	select {
	case due := <-waiting:
		require.WithinDuration(t, time.Now(), due, time.Second, "closed again: due at once")
	case <-time.After(5 * time.Second):
		t.Fatal("a goroutine still waited on the open schedule after the load was closed")
	}
	close(stop)
}
