package membership

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/shard"
)

// TestMovedOnce: the moves of a replacement pass only when each replica
// on the old server went to the new one once; a replica moved twice, one
// moved elsewhere or from elsewhere, one left behind, and a server that
// held nothing each fail.
func TestMovedOnce(t *testing.T) {
	m := &shard.Map{Servers: []string{"a", "b", "c", "d"}, Shards: 3, RF: 3,
		Placement: [][]string{{"a", "b", "c"}, {"b", "c", "d"}, {"c", "a", "d"}}, Meta: []string{"a", "b", "c"}}
	mv := func(sh int, from, to string) Moved { return Moved{Shard: sh, Name: "shard", From: from, To: to} }
	good := []Moved{mv(0, "a", "n"), mv(2, "a", "n"), mv(3, "a", "n")}
	got, err := MovedOnce(m, "a", "n", good)
	require.NoError(t, err)
	require.Equal(t, "3 moves for the 3 replicas on a", got)
	for name, moves := range map[string][]Moved{
		"moved twice":        append(good, mv(0, "a", "n")),
		"through a live one": {mv(0, "a", "d"), mv(1, "d", "n"), mv(2, "a", "n"), mv(3, "a", "n")},
		"from a live one":    {mv(0, "b", "n"), mv(2, "a", "n"), mv(3, "a", "n")},
		"to another":         {mv(0, "a", "n"), mv(2, "a", "b"), mv(3, "a", "n")},
		"the meta left":      good[:2],
		"none":               nil,
	} {
		_, err := MovedOnce(m, "a", "n", moves)
		require.Error(t, err, name)
	}
	_, err = MovedOnce(m, "z", "n", nil)
	require.Error(t, err, "a server that held nothing")
}
