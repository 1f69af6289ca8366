// Package replcheck compares the replicas of a shard: their content
// digests and key counts with their stores at the same entry, as kvsctl verify and
// the chaos checks ask for them (wire.StatusRequest{Digest: true}). A
// replica whose digest differs from its peers' holds other data than
// they do at the same point of the shard's log: damaged data that was
// replayed, or a bug.
package replcheck

import (
	"fmt"
	"slices"
	"strings"

	"github.com/batchkv/batchkv/wire"
)

// Replica is one replica's status, and the server that reported it.
type Replica struct {
	Addr   string
	Status wire.ShardStatus
}

// Verdict is what comparing one shard's replicas found.
type Verdict struct {
	Shard int
	// Settled says every replica answered, all had applied the same
	// entries, and each store was scanned at rest at the same command
	// entry (Index): only then are their digests comparable.
	Settled bool
	Index   uint64
	// StoresApart says the replicas had applied the same entries by
	// Raft's count, but a store was behind that, or changing during each
	// scan: not settled yet.
	StoresApart bool
	// Differs lists the replicas whose digest or key count differs from
	// the one most of them have (all of them when no two agree).
	Differs []string
	// Desc describes the comparison in one line.
	Desc string
}

// OK says the shard's replicas were compared and agree.
func (v Verdict) OK() bool { return v.Settled && len(v.Differs) == 0 }

// Compare compares the replicas of shard that answered; rf is how many
// it should have.
func Compare(shard int, reps []Replica, rf int) Verdict {
	v := Verdict{Shard: shard}
	if len(reps) != rf {
		v.Desc = fmt.Sprintf("shard %d: %d of %d replicas answered", shard, len(reps), rf)
		return v
	}
	// Raft counts an entry applied before the store has it: a replica
	// catching up can report the index of its peers while its store runs
	// behind. Each store says where it stood during its scan.
	for _, r := range reps {
		switch first := reps[0].Status; {
		case r.Status.ContentMoving:
			v.Desc = fmt.Sprintf("shard %d: %s was applying entries during each scan of its store", shard, r.Addr)
			v.StoresApart = true
			return v
		case r.Status.Applied != first.Applied:
			v.Desc = fmt.Sprintf("shard %d: applied %d and %d", shard, first.Applied, r.Status.Applied)
			return v
		case r.Status.StoreIndex != first.StoreIndex:
			v.Desc = fmt.Sprintf("shard %d: applied %d, stores at %d and %d", shard, first.Applied, first.StoreIndex, r.Status.StoreIndex)
			v.StoresApart = true
			return v
		}
	}
	v.Settled, v.Index = true, reps[0].Status.StoreIndex
	type content struct {
		digest uint64
		keys   int
	}
	count := map[content]int{}
	for _, r := range reps {
		count[content{r.Status.Digest, r.Status.Keys}]++
	}
	var most content
	best := 0
	for c, n := range count {
		if n > best || n == best && (c.digest < most.digest || c.digest == most.digest && c.keys < most.keys) {
			most, best = c, n
		}
	}
	var parts []string
	for _, r := range reps {
		c := content{r.Status.Digest, r.Status.Keys}
		mark := ""
		if c != most || best == 1 && len(reps) > 1 {
			v.Differs = append(v.Differs, r.Addr)
			mark = " DIFFERS"
		}
		parts = append(parts, fmt.Sprintf("%s %016x/%d keys%s", r.Addr, c.digest, c.keys, mark))
	}
	slices.Sort(v.Differs)
	v.Desc = fmt.Sprintf("shard %d at index %d: %s", shard, v.Index, strings.Join(parts, ", "))
	return v
}
