package verdict

import (
	"fmt"
	"strings"
	"time"

	"github.com/batchkv/batchkv/internal/replcheck"
	"github.com/batchkv/batchkv/wire"
)

// Convergence bounds: how long the replicas may take to apply the same
// entries once the load stopped, and how often they are asked.
const (
	convergeWithin = 30 * time.Second
	convergePoll   = 200 * time.Millisecond
)

// CheckConvergence waits until every replica of every shard has applied
// the same entries, then records whether the shards' digests agree.
// statuses returns every running replica's status (with its digest), by
// shard; an error says which server did not answer. The check's figure
// says how many polls found the replicas at one Raft index with a store
// behind it (replcheck.Verdict.StoresApart).
func (r *Result) CheckConvergence(statuses func() (map[int][]wire.ShardStatus, error), shards, rf int) {
	const name, target = "replicas converge", "same digest on every replica of every shard"
	deadline := time.Now().Add(convergeWithin)
	var last string
	apart := 0
	for time.Now().Before(deadline) {
		byShard, err := statuses()
		if err != nil {
			last = err.Error()
		} else {
			c := CompareReplicas(byShard, shards, rf)
			last = c.Desc
			if c.Settled {
				if apart > 0 {
					c.Desc += fmt.Sprintf(" (after %d polls found a store behind Raft's applied index)", apart)
				}
				r.Check(name, target, c.Desc, c.Agree)
				return
			}
			if c.StoresApart {
				apart++
			}
		}
		time.Sleep(convergePoll)
	}
	r.Check(name, target, "did not settle in 30s: "+last, false)
}

// Comparison is what comparing every shard's replicas found.
type Comparison struct {
	// Settled says every shard's replicas stood at one entry (and so
	// were compared), Agree that their digests agreed.
	Settled, Agree bool
	// StoresApart says a shard was not settled only because a store
	// was behind the entries Raft counts applied.
	StoresApart bool
	Desc        string
}

// CompareReplicas compares every shard's replicas (replcheck.Compare, as
// kvsctl verify compares them).
func CompareReplicas(byShard map[int][]wire.ShardStatus, shards, rf int) Comparison {
	c := Comparison{Agree: true}
	var parts []string
	for sh := range shards {
		var reps []replcheck.Replica
		for i, s := range byShard[sh] {
			reps = append(reps, replcheck.Replica{Addr: fmt.Sprintf("replica %d", i), Status: s})
		}
		v := replcheck.Compare(sh, reps, rf)
		if !v.Settled {
			return Comparison{StoresApart: v.StoresApart, Desc: v.Desc}
		}
		c.Agree = c.Agree && v.OK()
		parts = append(parts, v.Desc)
	}
	c.Settled, c.Desc = true, strings.Join(parts, "; ")
	return c
}
