package shard

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func servers(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("127.0.0.%d:8080", i+1)
	}
	return out
}

func TestPlacement(t *testing.T) {
	for _, tc := range []struct{ n, shards, rf int }{{3, 0, 3}, {3, 6, 3}, {5, 10, 3}, {4, 4, 1}, {1, 1, 1}} {
		l, err := New(servers(tc.n), tc.shards, tc.rf, 0)
		require.NoError(t, err)
		leads := make([]int, tc.n)
		hosted := make([]int, tc.n)
		for s := 0; s < l.Shards(); s++ {
			reps := l.Replicas(s)
			require.Len(t, reps, tc.rf)
			seen := map[int]bool{}
			for _, r := range reps {
				require.False(t, seen[r], "shard %d has two replicas on server %d", s, r)
				seen[r] = true
				hosted[r]++
			}
			require.Equal(t, reps[0], l.Preferred(s))
			leads[l.Preferred(s)]++
		}
		for i := range leads {
			require.Equal(t, l.Shards()/tc.n, leads[i], "server %d prefers to lead %d shards", i, leads[i])
			require.Equal(t, l.Shards()*tc.rf/tc.n, hosted[i])
			require.Len(t, l.Hosted(i), hosted[i])
		}
	}
}

func TestKeysSpreadOverShards(t *testing.T) {
	l, err := New(servers(3), 6, 3, 0)
	require.NoError(t, err)
	counts := make([]int, l.Shards())
	for i := 0; i < 60000; i++ {
		counts[l.Shard(fmt.Sprintf("user%d", i))]++
	}
	for s, c := range counts {
		require.InDelta(t, 10000, c, 2500, "shard %d owns %d of 60000 keys", s, c)
	}
}

func TestBadLayouts(t *testing.T) {
	_, err := New(nil, 0, 1, 0)
	require.Error(t, err)
	_, err = New(servers(2), 0, 3, 0)
	require.ErrorContains(t, err, "replication factor 3")
	_, err = New(servers(3), -1, 1, 0)
	require.ErrorContains(t, err, "want at least one")
}

// TestOneShard: one shard on three servers is one Raft group, led by the
// first server by preference.
func TestOneShard(t *testing.T) {
	l, err := New(servers(3), 1, 3, 0)
	require.NoError(t, err)
	require.Equal(t, 0, l.Shard("any key"))
	require.Equal(t, []int{0, 1, 2}, l.Replicas(0))
	require.Equal(t, 0, l.Preferred(0))
	for srv := range 3 {
		require.Equal(t, []int{0}, l.Hosted(srv))
	}
}

// TestIDCoversKeyToShard: the ID changes with the number of shards, which
// moves keys, and not with the servers or the replication factor, which
// change while a cluster runs without moving any key to another shard.
func TestIDCoversKeyToShard(t *testing.T) {
	id := func(srv []string, shards, rf int) uint64 {
		l, err := New(srv, shards, rf, 0)
		require.NoError(t, err)
		return l.ID()
	}
	base := id(servers(3), 3, 3)
	require.Equal(t, base, id(servers(3), 3, 3))
	require.NotEqual(t, base, id(servers(3), 6, 3))
	require.Equal(t, base, id(servers(3), 3, 2))
	require.Equal(t, base, id(servers(4)[1:], 3, 3))
}
