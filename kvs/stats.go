package kvs

import (
	"fmt"
	"io"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/batchkv/batchkv/internal/procstat"
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
	BadConns atomic.Uint64 // connections closed for bad input, a failed handshake, or over a cap
	// IdleClosed counts connections closed for idling past
	// Limits.IdleTimeout.
	IdleClosed atomic.Uint64
	// BudgetWaits counts batches that waited for a reply budget
	// (Limits.ReplyBudget, Limits.ConnReplyBudget).
	BudgetWaits atomic.Uint64

	// Results counts ops by the status they were answered with (indexed by
	// wire.Status); a batch rejected whole counts every op in it.
	Results [numStatuses]atomic.Uint64
	// BatchSizes counts batches (BatchOp calls and legacy calls) by ops:
	// bucket i holds sizes in (2^(i-1), 2^i], bucket 0 sizes 0 and 1.
	BatchSizes [batchSizeBuckets]atomic.Uint64
	BatchedOps atomic.Uint64 // ops in all batches, the sum of BatchSizes' sizes

	// requestTime is the recent mean time from a request's header read to
	// its reply written. A replicated shard's commit gate reads it.
	requestTime movingMean
}

const (
	numStatuses      = 16 // wire.Status values fit below this
	batchSizeBuckets = 17 // up to 2^16 = wire.MaxBatchOps
)

// recordBatch counts one batch of n ops.
func (s *Stats) recordBatch(n int) {
	s.BatchedOps.Add(uint64(n))
	b := bits.Len(uint(max(n, 1) - 1))
	s.BatchSizes[min(b, batchSizeBuckets-1)].Add(1)
}

// add adds n to c unless n is zero, which would only touch a shared cache
// line.
func (s *Stats) add(c *atomic.Uint64, n uint64) {
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

// countResults adds each result's status to Results, once per status
// present rather than once per op.
func (s *Stats) countResults(results []wire.Result) {
	var n [numStatuses]uint64
	for i := range results {
		n[results[i].Status%numStatuses]++
	}
	for st, c := range n {
		if c > 0 {
			s.Results[st].Add(c)
		}
	}
}

// snapshot is a copy of the counters at one instant, with the process's
// resource use.
type snapshot struct {
	gets, puts, deletes, in, out uint64
	proc                         procstat.Sample
}

func (s *Stats) snapshot() snapshot {
	return snapshot{
		gets: s.Gets.Load(), puts: s.Puts.Load(), deletes: s.Deletes.Load(),
		in: s.BytesIn.Load(), out: s.BytesOut.Load(), proc: procstat.Read(),
	}
}

// Reporter prints a server's per-second rates in the course skeleton's
// format, followed by a utilization line:
//
//	get/s 2850000.00
//	put/s 150000.00
//	ops/s 3000000.00
//	util cpu% 95.1 rss_mib 812.4 rx_mib/s 35.2 tx_mib/s 410.7 unix_ms 1763700000123
//
// put/s counts writes (puts and deletes); ops/s counts all ops. The course's report tooling takes
// the median of the ops/s lines; cmd/kvsreport does the same.
type Reporter struct {
	stats *Stats
	w     io.Writer
	last  snapshot
}

// NewReporter returns a reporter that writes to w, taking its first reading
// now.
func NewReporter(stats *Stats, w io.Writer) *Reporter {
	return &Reporter{stats: stats, w: w, last: stats.snapshot()}
}

// Report prints the rates since the previous call (or NewReporter).
func (r *Reporter) Report() error {
	now := r.stats.snapshot()
	secs := now.proc.At.Sub(r.last.proc.At).Seconds()
	if secs <= 0 {
		return nil
	}
	rate := func(a, b uint64) float64 { return float64(a-b) / secs }
	gets, puts := rate(now.gets, r.last.gets), rate(now.puts, r.last.puts)
	dels := rate(now.deletes, r.last.deletes)
	const mib = 1 << 20
	_, err := fmt.Fprintf(r.w, "get/s %.2f\nput/s %.2f\nops/s %.2f\nutil cpu%% %.1f rss_mib %.1f rx_mib/s %.2f tx_mib/s %.2f unix_ms %d\n",
		gets, puts+dels, gets+puts+dels,
		procstat.CPUPercent(r.last.proc, now.proc), float64(now.proc.RSS)/mib,
		rate(now.in, r.last.in)/mib, rate(now.out, r.last.out)/mib, now.proc.At.UnixMilli())
	r.last = now
	return err
}

// Run calls Report every interval until done is closed.
func (r *Reporter) Run(done <-chan struct{}, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			_ = r.Report()
		}
	}
}

// nodeStats reads the counters and the process's resource use for
// KVService.Status.
func (s *Server) nodeStats() *wire.NodeStats {
	st := &s.stats
	var errs uint64
	for i := range st.Results {
		if s := wire.Status(i); !s.Applied() && s != wire.StatusNotLeader {
			errs += st.Results[i].Load()
		}
	}
	p := procstat.Read()
	return &wire.NodeStats{
		At:        p.At,
		Started:   s.started,
		Gets:      st.Gets.Load(),
		Writes:    st.Puts.Load() + st.Deletes.Load(),
		Errors:    errs,
		Redirects: st.Results[wire.StatusNotLeader].Load() + st.Results[wire.StatusMoved].Load(),
		BadConn:   st.BadConns.Load(),
		BytesIn:   st.BytesIn.Load(),
		BytesOut:  st.BytesOut.Load(),
		CPU:       p.CPU,
		RSS:       p.RSS,
		Conns:     s.Conns(),
	}
}
