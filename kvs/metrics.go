package kvs

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/batchkv/batchkv/internal/procstat"
	"github.com/batchkv/batchkv/kvs/backend"
	"github.com/batchkv/batchkv/kvs/stats"
	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
)

// Metrics returns a Prometheus registry with the server's counters, the Go
// runtime's metrics and the process's (CPU, memory, file descriptors).
// The counters are the ones the server keeps anyway (stats.Stats), read
// when scraped, so serving metrics adds nothing to the path of a request.
func (s *Server) Metrics() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		stats.NewCollector(&s.stats),
	)
	reg.MustRegister(stats.NewMemoryGauges(stats.Memory{
		Max: func() int64 { return s.cfg.MaxMemory }, StoreLimit: s.apply.Limit.Limit, Stores: s.cfg.account.Bytes,
		OffHeapMapped: func() int64 { m, _ := store.OffHeap(); return m },
		ReplyBudget:   func() int64 { return s.limits.ReplyBudget }, ReplyHeld: s.replies.Held,
		RequestBudget: func() int64 { return s.limits.RequestBudget }, RequestHeld: s.requests.Held,
		LogCacheLimit: s.cfg.logCache.Limit, LogCacheHeld: s.cfg.logCache.Held,
	})...)
	if rb, ok := s.svc.backend.(*backend.Replicated); ok {
		reg.MustRegister(stats.NewDiskCollector(rb.Set().Disk))
	}
	return reg
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

		StoreBytes: s.cfg.account.Bytes(),
		StoreLimit: s.apply.Limit.Limit(),
		MaxMemory:  s.cfg.MaxMemory,
		Buffered:   s.replies.Held() + s.requests.Held() + s.cfg.logCache.Held(),
	}
}
