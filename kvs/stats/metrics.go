package stats

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/batchkv/batchkv/wire"
)

// NewCollector returns a Prometheus collector of st's counters, read
// when scraped, so serving metrics adds nothing to the path of a
// request.
func NewCollector(st *Stats) prometheus.Collector { return newStatsCollector(st) }

// statsCollector exposes Stats as Prometheus metrics.
type statsCollector struct {
	stats                                                *Stats
	ops, results, batches, batchOps                      *prometheus.Desc
	bytesIn, bytesOut, forwarded, badConns               *prometheus.Desc
	idleClosed, budgetWaits, requestWaits, stalledClosed *prometheus.Desc
}

func newStatsCollector(st *Stats) *statsCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("batchkv_"+name, help, labels, nil)
	}
	return &statsCollector{
		stats:        st,
		ops:          d("ops_total", "Ops applied or answered, by type.", "type"),
		results:      d("op_results_total", "Ops answered, by status (ok and not_found are not errors).", "status"),
		batches:      d("batches_total", "BatchOp calls and legacy single-op calls."),
		batchOps:     d("batch_ops", "Ops per batch."),
		bytesIn:      d("received_bytes_total", "Bytes read from client connections."),
		bytesOut:     d("sent_bytes_total", "Bytes written to client connections."),
		forwarded:    d("forwarded_ops_total", "Ops sent on to the server that owns them."),
		badConns:     d("bad_connections_total", "Connections closed for bad input (a refused Raft message among it), a failed handshake, or over a cap."),
		idleClosed:   d("idle_closed_connections_total", "Connections closed for idling past the idle timeout."),
		budgetWaits:  d("reply_budget_waits_total", "Batches that waited for a reply budget (bytes of unwritten replies)."),
		requestWaits: d("request_budget_waits_total", "Requests whose reading waited for a request budget (bytes of requests not yet answered)."),
		stalledClosed: d("stalled_closed_connections_total",
			"Connections closed for leaving their replies unread while the server was over its reply budget."),
	}
}

// Describe implements prometheus.Collector.
func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.ops, c.results, c.batches, c.batchOps, c.bytesIn, c.bytesOut, c.forwarded, c.badConns,
		c.idleClosed, c.budgetWaits, c.requestWaits, c.stalledClosed} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(c.ops, st.Gets.Load(), "get")
	counter(c.ops, st.Puts.Load(), "put")
	counter(c.ops, st.Deletes.Load(), "delete")
	for i := range st.Results {
		if v := st.Results[i].Load(); v > 0 {
			counter(c.results, v, statusLabel(wire.Status(i)))
		}
	}
	counter(c.batches, st.BatchCount())
	counter(c.bytesIn, st.BytesIn.Load())
	counter(c.bytesOut, st.BytesOut.Load())
	counter(c.forwarded, st.Forwarded.Load())
	counter(c.badConns, st.BadConns.Load())
	counter(c.idleClosed, st.IdleClosed.Load())
	counter(c.budgetWaits, st.BudgetWaits.Load())
	counter(c.requestWaits, st.RequestWaits.Load())
	counter(c.stalledClosed, st.StalledClosed.Load())

	// The histogram's buckets are cumulative; ours count each range once.
	buckets := map[float64]uint64{}
	var count uint64
	for i := range st.BatchSizes {
		count += st.BatchSizes[i].Load()
		buckets[float64(uint64(1)<<i)] = count
	}
	ch <- prometheus.MustNewConstHistogram(c.batchOps, count, float64(st.BatchedOps.Load()), buckets)
}

// statusLabel is a status's name as a Prometheus label value.
func statusLabel(s wire.Status) string { return strings.ReplaceAll(s.String(), " ", "_") }
