package store

import (
	"hash/maphash"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/wire"
)

// TestApplyBatchTagZeroOnEmptySlot: a key whose hash tag is 0 matches an
// empty slot's tag bits; the prefetching pass must not take that slot for
// a record. Found by a standard run, where the server panicked.
func TestApplyBatchTagZeroOnEmptySlot(t *testing.T) {
	s := NewArena()
	key := ""
	for i := 0; key == ""; i++ {
		if k := strconv.Itoa(i); tagOf(maphash.String(s.seed, k)) == 0 {
			key = k
		}
	}
	ops := []wire.Op{{Code: wire.OpGet, Key: key}, {Code: wire.OpPut, Key: key, Value: "v"}, {Code: wire.OpGet, Key: key}}
	res := make([]wire.Result, len(ops))
	s.ApplyBatch(ops, res, &Values{Limit: 1 << 30})
	require.Equal(t, []wire.Result{{Status: wire.StatusNotFound}, {Status: wire.StatusOK}, {Status: wire.StatusOK, Value: "v"}}, res)

	// A tombstone's tag bits are 0 too: delete the key, leaving one in its
	// home slot, and look it up again.
	s.Delete(key)
	res = make([]wire.Result, 1)
	s.ApplyBatch(ops[:1], res, &Values{Limit: 1 << 30})
	require.Equal(t, []wire.Result{{Status: wire.StatusNotFound}}, res)
}
