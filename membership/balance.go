package membership

import (
	"slices"

	"github.com/batchkv/batchkv/shard"
)

// The planners below are pure functions of a map and of the members
// that did not answer (down): each returns the next single step towards
// balance, so that a command can apply it, read the map again and ask
// for the next. A member that is down receives nothing (a replica moved
// to it could not catch up, and a shard it were to lead would have no
// leader it prefers), and in balanceStep and leaderStep it gives first,
// for as long as it holds more than a live member plus one: what it holds
// is what its shards lack. With no member down they plan as they did
// before they knew of any.

// replicaCounts returns how many data shard replicas each member holds.
func replicaCounts(m *shard.Map) map[string]int {
	n := make(map[string]int, len(m.Servers))
	for _, s := range m.Servers {
		n[s] = 0
	}
	for _, reps := range m.Placement {
		for _, r := range reps {
			n[r]++
		}
	}
	return n
}

// leaderCounts returns how many shards each member is the preferred
// leader of.
func leaderCounts(m *shard.Map) map[string]int {
	n := make(map[string]int, len(m.Servers))
	for _, s := range m.Servers {
		n[s] = 0
	}
	for _, reps := range m.Placement {
		n[reps[0]]++
	}
	return n
}

// unevenPairs calls try with pairs of members whose counts in n differ by
// more than one, the most uneven first but with the members that are
// down first of all as givers and never as takers, until try returns
// true; it reports whether one did.
func unevenPairs(servers []string, n map[string]int, down map[string]bool, try func(from, to string) bool) bool {
	byLoad := slices.Clone(servers)
	slices.SortStableFunc(byLoad, func(a, b string) int {
		if down[a] != down[b] {
			if down[a] {
				return -1
			}
			return 1
		}
		return n[b] - n[a]
	})
	// The live members, fewest first: byLoad backwards, which with no
	// member down is the order the planners always took.
	var takers []string
	for _, s := range slices.Backward(byLoad) {
		if !down[s] {
			takers = append(takers, s)
		}
	}
	for _, from := range byLoad {
		for _, to := range takers {
			if n[from]-n[to] <= 1 {
				break
			}
			if try(from, to) {
				return true
			}
		}
	}
	return false
}

// balanceStep returns a move of one replica, of shard sh from the member
// with the most replicas (or one that is down) to the live one with the
// fewest, or ok false when no such two members differ by more than one.
func balanceStep(m *shard.Map, down map[string]bool) (sh int, from, to string, ok bool) {
	ok = unevenPairs(m.Servers, replicaCounts(m), down, func(f, t string) bool {
		// Prefer a shard that f does not lead: its move needs no change
		// of leader. From a member that is down, prefer one it is the
		// preferred leader of: that moves off it too.
		prefer := func(s int) bool { return (m.Placement[s][0] == f) == down[f] }
		best := -1
		for s, reps := range m.Placement {
			if !slices.Contains(reps, f) || slices.Contains(reps, t) {
				continue
			}
			if best < 0 || (!prefer(best) && prefer(s)) {
				best = s
			}
		}
		sh, from, to = best, f, t
		return best >= 0
	})
	return sh, from, to, ok
}

// drainStep returns the next replica to move off addr (a data shard, or
// the meta group as shard m.Shards) and the live member with the fewest
// replicas that lacks one of it, or ok false when addr holds none, or
// none of its replicas has such a member to go to.
func drainStep(m *shard.Map, addr string, down map[string]bool) (sh int, to string, ok bool) {
	n := replicaCounts(m)
	target := func(reps []string) string {
		best := ""
		for _, s := range m.Servers {
			if s != addr && !down[s] && !slices.Contains(reps, s) && (best == "" || n[s] < n[best]) {
				best = s
			}
		}
		return best
	}
	for s, reps := range m.Placement {
		if slices.Contains(reps, addr) {
			if to := target(reps); to != "" {
				return s, to, true
			}
		}
	}
	if slices.Contains(m.Meta, addr) {
		if to := target(m.Meta); to != "" {
			return m.Shards, to, true
		}
	}
	return 0, "", false
}

// leaderStep returns a shard whose preferred leader should become to, a
// live replica of it that prefers fewer shards, or ok false when no such
// two members' preferred counts differ by more than one (or no shard
// allows evening them further).
func leaderStep(m *shard.Map, down map[string]bool) (sh int, to string, ok bool) {
	ok = unevenPairs(m.Servers, leaderCounts(m), down, func(f, t string) bool {
		for s, reps := range m.Placement {
			if reps[0] == f && slices.Contains(reps, t) {
				sh, to = s, t
				return true
			}
		}
		return false
	})
	return sh, to, ok
}
