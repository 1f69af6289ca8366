package stats

import (
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Memory reads a server's memory bounds and what it holds against them;
// each field is read when scraped.
type Memory struct {
	Max           func() int64 // -max-memory; 0: no bound
	StoreLimit    func() int64 // what the stores may hold; 0: no bound
	Stores        func() int64 // what the stores hold
	OffHeapMapped func() int64 // what the process's stores have mapped
	ReplyBudget   func() int64 // bytes unwritten replies may hold
	ReplyHeld     func() int64 // bytes unwritten replies hold
	RequestBudget func() int64 // bytes requests not yet answered may hold
	RequestHeld   func() int64 // bytes they hold
	LogCacheLimit func() int64 // what the Raft log caches may hold; 0: no bound
	LogCacheHeld  func() int64 // what they hold
}

// NewMemoryGauges returns m as Prometheus gauges, with the Go runtime's
// memory limit beside them.
func NewMemoryGauges(m Memory) []prometheus.Collector {
	g := func(name, help string, f func() int64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "batchkv_" + name, Help: help}, func() float64 { return float64(f()) })
	}
	return []prometheus.Collector{
		g("memory_max_bytes", "The server's -max-memory (0: no bound).", m.Max),
		g("store_limit_bytes", "What the stores may hold before writes are refused (0: no bound).", m.StoreLimit),
		g("store_bytes", "What the stores hold: records and slot tables.", m.Stores),
		g("offheap_mapped_bytes", "Memory the process's stores have mapped from the kernel, in use or kept for reuse.", m.OffHeapMapped),
		g("go_memory_limit_bytes", "The Go runtime's soft memory limit (GOMEMLIMIT).", func() int64 { return debug.SetMemoryLimit(-1) }),
		g("reply_budget_bytes", "Bytes of values that unwritten replies may hold, server-wide.", m.ReplyBudget),
		g("reply_held_bytes", "Bytes of values that unwritten replies hold now.", m.ReplyHeld),
		g("request_budget_bytes", "Bytes that requests not yet answered may hold, server-wide: their ops and the results made for them.", m.RequestBudget),
		g("request_held_bytes", "Bytes that requests not yet answered hold now.", m.RequestHeld),
		g("raft_log_cache_limit_bytes", "What the replicas' Raft log caches may hold together (0: no bound but 1,024 entries each).", m.LogCacheLimit),
		g("raft_log_cache_bytes", "What the replicas' Raft log caches hold now.", m.LogCacheHeld),
	}
}
