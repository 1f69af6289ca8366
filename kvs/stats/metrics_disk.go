package stats

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/batchkv/batchkv/wire"
)

// diskCollector exposes the space of a replicated server's data dir, and
// whether it is full (the server then takes no log entries).
type diskCollector struct {
	disk              func() *wire.DiskStats
	free, total, full *prometheus.Desc
}

// NewDiskCollector returns a Prometheus collector of the space of a
// replicated server's data dir, as disk reads it (nil: nothing to
// report).
func NewDiskCollector(disk func() *wire.DiskStats) prometheus.Collector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("batchkv_"+name, help, []string{"dir"}, nil)
	}
	return &diskCollector{disk: disk,
		free:  d("disk_free_bytes", "Bytes free to the server in the file system of its data dir."),
		total: d("disk_total_bytes", "Size of the file system of the data dir."),
		full:  d("disk_full", "1 while the data dir's free space is below the reserve: the server takes no log entries, leads no shard whose other replicas can write."),
	}
}

// Describe implements prometheus.Collector.
func (c *diskCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.free
	ch <- c.total
	ch <- c.full
}

// Collect implements prometheus.Collector.
func (c *diskCollector) Collect(ch chan<- prometheus.Metric) {
	d := c.disk()
	if d == nil {
		return
	}
	full := 0.0
	if d.Full {
		full = 1
	}
	ch <- prometheus.MustNewConstMetric(c.free, prometheus.GaugeValue, float64(d.Free), d.Dir)
	ch <- prometheus.MustNewConstMetric(c.total, prometheus.GaugeValue, float64(d.Total), d.Dir)
	ch <- prometheus.MustNewConstMetric(c.full, prometheus.GaugeValue, full, d.Dir)
}
