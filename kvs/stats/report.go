package stats

import (
	"fmt"
	"io"
	"time"

	"github.com/batchkv/batchkv/internal/procstat"
)

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
