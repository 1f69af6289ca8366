package main

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/batchkv/batchkv/wire"
)

// refusedOps counts, by status, the ops of the load that a server
// answered without deciding them: a write refused because its stores are
// at their share of -max-memory or its shard's disks are full, an op over
// the limits, a write whose outcome is unknown. A load that counted them
// as done would report refusals as throughput.
type refusedOps struct {
	by [256]atomic.Uint64
}

// count adds the undecided results of one batch and returns how many
// there were.
func (r *refusedOps) count(results []wire.Result) int {
	n := 0
	for i := range results {
		if st := results[i].Status; !st.Decided() {
			r.by[st].Add(1)
			n++
		}
	}
	return n
}

// total returns how many ops were refused.
func (r *refusedOps) total() uint64 {
	var n uint64
	for i := range r.by {
		n += r.by[i].Load()
	}
	return n
}

// String lists the counts by status: "out of memory 12, no space 3".
func (r *refusedOps) String() string {
	var parts []string
	for i := range r.by {
		if n := r.by[i].Load(); n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", wire.Status(i), n))
		}
	}
	return strings.Join(parts, ", ")
}
