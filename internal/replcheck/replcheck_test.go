package replcheck

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/wire"
)

func rep(addr string, applied, digest uint64) Replica {
	return Replica{Addr: addr, Status: wire.ShardStatus{Applied: applied, StoreIndex: applied, Digest: digest, Keys: 10}}
}

// TestCompare: replicas at one index with one digest agree; one whose
// digest differs is named; replicas at different indexes, or missing,
// are not compared; with no two alike, every replica is named.
func TestCompare(t *testing.T) {
	v := Compare(0, []Replica{rep("a", 5, 1), rep("b", 5, 1), rep("c", 5, 1)}, 3)
	require.True(t, v.OK(), v.Desc)
	v = Compare(0, []Replica{rep("a", 5, 1), rep("b", 5, 2), rep("c", 5, 1)}, 3)
	require.True(t, v.Settled)
	require.Equal(t, []string{"b"}, v.Differs, v.Desc)
	require.Contains(t, v.Desc, "b 0000000000000002/10 keys DIFFERS")
	v = Compare(0, []Replica{rep("a", 5, 1), rep("b", 4, 1), rep("c", 5, 1)}, 3)
	require.False(t, v.Settled)
	require.False(t, v.OK())
	v = Compare(0, []Replica{rep("a", 5, 1), rep("b", 5, 1)}, 3)
	require.False(t, v.Settled)
	v = Compare(0, []Replica{rep("a", 5, 1), rep("b", 5, 2), rep("c", 5, 3)}, 3)
	require.Equal(t, []string{"a", "b", "c"}, v.Differs)
}

// TestCompareWaitsForTheStores: Raft may count an entry applied before
// the store has it. Replicas at one applied index whose stores stand at
// different entries, or one whose store changed during every scan, are
// not compared, although their digests differ; once the stores stand
// at one entry, the one that differs is named.
func TestCompareWaitsForTheStores(t *testing.T) {
	behind := rep("b", 5, 2)
	behind.Status.StoreIndex = 4
	v := Compare(0, []Replica{rep("a", 5, 1), behind, rep("c", 5, 1)}, 3)
	require.False(t, v.Settled, v.Desc)
	require.True(t, v.StoresApart)
	require.Contains(t, v.Desc, "stores at 5 and 4")
	moving := rep("b", 5, 2)
	moving.Status.ContentMoving = true
	v = Compare(0, []Replica{rep("a", 5, 1), moving, rep("c", 5, 1)}, 3)
	require.False(t, v.Settled, v.Desc)
	require.True(t, v.StoresApart)
	require.Contains(t, v.Desc, "b was applying entries")
	v = Compare(0, []Replica{rep("a", 5, 1), rep("b", 5, 2), rep("c", 5, 1)}, 3)
	require.Equal(t, []string{"b"}, v.Differs, v.Desc)
}
