package autobatch

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/wire"
)

// TestFits: a run joins a pending batch only within wire.MaxBatchOps ops
// and maxPendingBytes, and an empty batch takes any run.
func TestFits(t *testing.T) {
	for _, c := range []struct {
		ops, pending, n, size int
		want                  bool
	}{
		{0, 0, wire.MaxBatchOps, 60 << 20, true}, // alone, whatever its size
		{10, 1 << 20, 5, 1 << 20, true},
		{10, 10 << 20, 5, 6 << 20, true},          // to the byte
		{10, 10 << 20, 5, 6<<20 + 1, false},       // one byte over
		{1, 100, 1, 55 << 20, false},              // a small batch and a large run: 55 MiB would join it
		{wire.MaxBatchOps - 5, 100, 5, 100, true}, // to the op
		{wire.MaxBatchOps - 5, 100, 6, 100, false},
	} {
		require.Equal(t, c.want, fits(c.ops, c.pending, c.n, c.size), "%+v", c)
	}
}

// TestResendable: of the ops a shared batch answered TooLarge, only gets
// and conditional puts whose key no other op of the part touches are sent
// again: a get before a put of its key would read the put.
func TestResendable(t *testing.T) {
	tooLarge, ok := wire.Result{Status: wire.StatusTooLarge}, wire.Result{Status: wire.StatusOK}
	part := []wire.Op{
		{Code: wire.OpGet, Key: "alone"},                         // 0: sent again
		{Code: wire.OpGet, Key: "overwritten"},                   // 1: a put of its key follows
		{Code: wire.OpPut, Key: "overwritten", Value: "x"},       // 2
		{Code: wire.OpPutIf, Key: "swap", Cond: wire.CondAlways}, // 3: sent again
		{Code: wire.OpGet, Key: "fine"},                          // 4: answered
		{Code: wire.OpGet, Key: "twice"},                         // 5: read twice
		{Code: wire.OpGet, Key: "twice"},                         // 6
		{Code: wire.OpPut, Key: "big", Value: "x"},               // 7: TooLarge but a put
	}
	res := []wire.Result{tooLarge, tooLarge, ok, tooLarge, ok, tooLarge, tooLarge, tooLarge}
	require.Equal(t, []int{0, 3}, Resendable(part, res))
	require.Empty(t, Resendable(part[4:5], res[4:5]))
}

// TestResendableDeletes: deletes refused with other callers' puts for
// memory are sent again alone, unless the caller's part has puts of its
// own, which alone would have been refused with them.
func TestResendableDeletes(t *testing.T) {
	noMemory, ok := wire.Result{Status: wire.StatusNoMemory}, wire.Result{Status: wire.StatusOK}
	dels := []wire.Op{
		{Code: wire.OpDelete, Key: "a"},     // 0: sent again
		{Code: wire.OpGet, Key: "b"},        // 1: answered
		{Code: wire.OpDelete, Key: "c"},     // 2: sent again
		{Code: wire.OpGet, Key: "twice"},    // 3: answered
		{Code: wire.OpDelete, Key: "twice"}, // 4: its key read before it
	}
	res := []wire.Result{noMemory, ok, noMemory, ok, noMemory}
	require.Equal(t, []int{0, 2}, Resendable(dels, res))

	withPut := append(slices.Clone(dels[:1]), wire.Op{Code: wire.OpPut, Key: "p", Value: "v"})
	require.Empty(t, Resendable(withPut, []wire.Result{noMemory, noMemory}))
}
