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
// shard; an error says which server did not answer.
func (r *Result) CheckConvergence(statuses func() (map[int][]wire.ShardStatus, error), shards, rf int) {
	const name, target = "replicas converge", "same digest on every replica of every shard"
	deadline := time.Now().Add(convergeWithin)
	var last string
	for time.Now().Before(deadline) {
		byShard, err := statuses()
		if err != nil {
			last = err.Error()
		} else {
			settled, agree, desc := CompareReplicas(byShard, shards, rf)
			last = desc
			if settled {
				r.Check(name, target, desc, agree)
				return
			}
		}
		time.Sleep(convergePoll)
	}
	r.Check(name, target, "did not settle in 30s: "+last, false)
}

// CompareReplicas says whether every shard's replicas have applied the
// same index (settled), and if so whether their digests agree
// (replcheck.Compare, as kvsctl verify compares them).
func CompareReplicas(byShard map[int][]wire.ShardStatus, shards, rf int) (settled, agree bool, desc string) {
	agree = true
	var parts []string
	for sh := range shards {
		var reps []replcheck.Replica
		for i, s := range byShard[sh] {
			reps = append(reps, replcheck.Replica{Addr: fmt.Sprintf("replica %d", i), Status: s})
		}
		v := replcheck.Compare(sh, reps, rf)
		if !v.Settled {
			return false, false, v.Desc
		}
		agree = agree && v.OK()
		parts = append(parts, v.Desc)
	}
	return true, agree, strings.Join(parts, "; ")
}
