package verdict

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/wire"
)

// TestCompareReplicas: replicas at different applied indexes have not
// settled; settled replicas with different digests or key counts do not
// converge.
func TestCompareReplicas(t *testing.T) {
	rep := func(applied, digest uint64) wire.ShardStatus {
		return wire.ShardStatus{Shard: 0, Applied: applied, Digest: digest, Keys: 10}
	}
	settled, agree, _ := CompareReplicas(map[int][]wire.ShardStatus{0: {rep(5, 1), rep(5, 1), rep(5, 1)}}, 1, 3)
	require.True(t, settled)
	require.True(t, agree)
	settled, _, _ = CompareReplicas(map[int][]wire.ShardStatus{0: {rep(5, 1), rep(4, 1), rep(5, 1)}}, 1, 3)
	require.False(t, settled)
	settled, _, _ = CompareReplicas(map[int][]wire.ShardStatus{0: {rep(5, 1), rep(5, 1)}}, 1, 3)
	require.False(t, settled)
	settled, agree, desc := CompareReplicas(map[int][]wire.ShardStatus{0: {rep(5, 1), rep(5, 2), rep(5, 1)}}, 1, 3)
	require.True(t, settled)
	require.False(t, agree, desc)
}
