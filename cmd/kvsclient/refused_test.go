package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/wire"
)

func TestRefusedOpsCountsUndecidedResults(t *testing.T) {
	var r refusedOps
	n := r.count([]wire.Result{
		{Status: wire.StatusOK}, {Status: wire.StatusNotFound}, {Status: wire.StatusMismatch},
		{Status: wire.StatusMismatchNotFound}, {Status: wire.StatusNoMemory}, {Status: wire.StatusNoMemory},
		{Status: wire.StatusNoSpace},
	})
	require.Equal(t, 3, n)
	require.EqualValues(t, 3, r.total())
	require.Equal(t, wire.StatusNoSpace.String()+" 1, "+wire.StatusNoMemory.String()+" 2", r.String())
}
