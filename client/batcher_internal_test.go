package client

import (
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
