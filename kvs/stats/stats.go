// Package stats counts what a batchkv server does (Stats), prints the
// per-second report of the course skeleton's format (Reporter), and
// exposes the counters, and a replicated server's disk space, as
// Prometheus metrics (NewCollector, NewDiskCollector).
package stats

import (
	"math/bits"
	"sync/atomic"

	"github.com/batchkv/batchkv/wire"
)

// Stats counts what a server did. Counters are added to once per batch, not
// per op, so that counting does not put a shared cache line on the hot path
// of every op.
type Stats struct {
	Gets      atomic.Uint64 // get ops answered (found or not)
	Puts      atomic.Uint64 // put ops applied
	Deletes   atomic.Uint64 // delete ops applied
	Rejected  atomic.Uint64 // ops rejected for bad input or limits
	Forwarded atomic.Uint64 // ops sent on to the server that owns them
	// BytesIn and BytesOut count the bytes read from and written to every
	// connection: clients', peers' Raft connections accepted, and the
	// Raft connections this server dials.
	BytesIn  atomic.Uint64
	BytesOut atomic.Uint64
	BadConns atomic.Uint64 // connections closed for bad input (a Raft message refused among it), a failed handshake, or over a cap
	// IdleClosed counts connections closed for idling past
	// Limits.IdleTimeout.
	IdleClosed atomic.Uint64
	// BudgetWaits counts batches that waited for a reply budget
	// (Limits.ReplyBudget, Limits.ConnReplyBudget).
	BudgetWaits atomic.Uint64
	// RequestWaits counts requests whose reading waited for a request
	// budget (Limits.RequestBudget, Limits.ConnRequestBudget).
	RequestWaits atomic.Uint64
	// StalledClosed counts connections closed for holding unwritten
	// replies without reading them while the server was over its reply
	// budget (Limits.StallTimeout).
	StalledClosed atomic.Uint64

	// Results counts ops by the status they were answered with (indexed by
	// wire.Status); a batch rejected whole counts every op in it.
	Results [NumStatuses]atomic.Uint64
	// BatchSizes counts batches (BatchOp calls and legacy calls) by ops:
	// bucket i holds sizes in (2^(i-1), 2^i], bucket 0 sizes 0 and 1.
	BatchSizes [batchSizeBuckets]atomic.Uint64
	BatchedOps atomic.Uint64 // ops in all batches, the sum of BatchSizes' sizes
}

const (
	// NumStatuses is the length of Results: wire.Status values fit below
	// it.
	NumStatuses      = 16
	batchSizeBuckets = 17 // up to 2^16 = wire.MaxBatchOps
)

// RecordBatch counts one batch of n ops.
func (s *Stats) RecordBatch(n int) {
	s.BatchedOps.Add(uint64(n))
	b := bits.Len(uint(max(n, 1) - 1))
	s.BatchSizes[min(b, batchSizeBuckets-1)].Add(1)
}

// Add adds n to c, one of s's counters, unless n is zero, which would
// only touch a shared cache line.
func (s *Stats) Add(c *atomic.Uint64, n uint64) {
	if n > 0 {
		c.Add(n)
	}
}

// BatchCount returns the number of batches, the sum of BatchSizes.
func (s *Stats) BatchCount() uint64 {
	var n uint64
	for i := range s.BatchSizes {
		n += s.BatchSizes[i].Load()
	}
	return n
}

// CountResults adds each result's status to Results, once per status
// present rather than once per op.
func (s *Stats) CountResults(results []wire.Result) {
	var n [NumStatuses]uint64
	for i := range results {
		n[results[i].Status%NumStatuses]++
	}
	for st, c := range n {
		if c > 0 {
			s.Results[st].Add(c)
		}
	}
}
