package membership

import (
	"fmt"

	"github.com/batchkv/batchkv/shard"
)

// MovedOnce checks moves against before, the map before a server was
// replaced: they must move each replica that before places on from (its
// shards' and the meta group's) onto to, once, and nothing else, as
// ReplaceServer does. It returns what it found, and an error for a move
// of another replica, a replica moved twice, one not moved, or a from
// that held none.
func MovedOnce(before *shard.Map, from, to string, moves []Moved) (string, error) {
	want := map[int]bool{}
	for _, sh := range groupsOn(before, from) {
		want[sh] = true
	}
	held := len(want)
	if held == 0 {
		return "", fmt.Errorf("membership: the map before holds no replica on %s", from)
	}
	for _, mv := range moves {
		if !want[mv.Shard] || mv.From != from || mv.To != to {
			return "", fmt.Errorf("membership: %s moved %s -> %s, not one of the %d replicas on %s to %s (once)", mv.Name, mv.From, mv.To, held, from, to)
		}
		delete(want, mv.Shard)
	}
	if len(want) > 0 {
		return "", fmt.Errorf("membership: %d moves for the %d replicas on %s: %d not moved", len(moves), held, from, len(want))
	}
	return fmt.Sprintf("%d moves for the %d replicas on %s", len(moves), held, from), nil
}
