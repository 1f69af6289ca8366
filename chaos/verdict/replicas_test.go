package verdict

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/wire"
)

// TestCompareReplicas: replicas at different applied indexes have not
// settled, nor have replicas at one whose stores stand at different
// entries; settled replicas with different digests or key counts do not
// converge.
func TestCompareReplicas(t *testing.T) {
	rep := func(applied, digest uint64) wire.ShardStatus {
		return wire.ShardStatus{Shard: 0, Applied: applied, StoreIndex: applied, Digest: digest, Keys: 10}
	}
	c := CompareReplicas(map[int][]wire.ShardStatus{0: {rep(5, 1), rep(5, 1), rep(5, 1)}}, 1, 3)
	require.True(t, c.Settled)
	require.True(t, c.Agree)
	c = CompareReplicas(map[int][]wire.ShardStatus{0: {rep(5, 1), rep(4, 1), rep(5, 1)}}, 1, 3)
	require.False(t, c.Settled)
	require.False(t, c.StoresApart)
	c = CompareReplicas(map[int][]wire.ShardStatus{0: {rep(5, 1), rep(5, 1)}}, 1, 3)
	require.False(t, c.Settled)
	behind := rep(5, 2)
	behind.StoreIndex = 4
	c = CompareReplicas(map[int][]wire.ShardStatus{0: {rep(5, 1), behind, rep(5, 1)}}, 1, 3)
	require.False(t, c.Settled, c.Desc)
	require.True(t, c.StoresApart)
	c = CompareReplicas(map[int][]wire.ShardStatus{0: {rep(5, 1), rep(5, 2), rep(5, 1)}}, 1, 3)
	require.True(t, c.Settled)
	require.False(t, c.Agree, c.Desc)
}
