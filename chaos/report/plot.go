package report

import (
	"fmt"
	"math"
	"time"

	"github.com/batchkv/batchkv/chaos/experiment"
	"github.com/batchkv/batchkv/chaos/monitor"
	"github.com/batchkv/batchkv/chaos/timeline"
	"github.com/batchkv/batchkv/internal/plots"
)

// plot draws timeline.png: bulk ops/s, batch latencies and shard 0's
// term per second, the fault windows shaded.
func plot(r *experiment.Run, secs []timeline.Second, vs []monitor.View, wins []timeline.Window) error {
	n := len(secs)
	at := make([]float64, n) // the middle of each second
	for i := range at {
		at[i] = float64(i) + 0.5
	}
	ops := make([]float64, n)
	p50, p99, p999 := make([]float64, n), make([]float64, n), make([]float64, n)
	term := make([]float64, n)
	for i, s := range secs {
		ops[i] = float64(s.Ops)
		p50[i], p99[i], p999[i] = math.NaN(), math.NaN(), math.NaN()
		if s.Lat.Count() > 0 {
			p50[i] = float64(s.Lat.Quantile(0.5)) / 1e6
			p99[i] = float64(s.Lat.Quantile(0.99)) / 1e6
			p999[i] = float64(s.Lat.Quantile(0.999)) / 1e6
		}
		term[i] = float64(monitor.ViewAt(vs, time.Duration(i+1)*time.Second).Term)
	}
	var spans []plots.Span
	for _, w := range wins {
		if w.Label != timeline.Baseline {
			spans = append(spans, plots.Span{From: w.From.Seconds(), To: w.To.Seconds(), Label: w.Label})
		}
	}
	panels := []plots.Panel{
		{YLabel: "bulk ops/s", Series: []plots.TimeSeries{{Name: "ops/s", Values: ops, Seconds: at}}},
		{YLabel: "batch latency (ms)", Series: []plots.TimeSeries{{Name: "p50", Values: p50, Seconds: at}, {Name: "p99", Values: p99, Seconds: at}, {Name: "p99.9", Values: p999, Seconds: at}}},
		{YLabel: "shard 0 term", Series: []plots.TimeSeries{{Name: "term", Values: term, Seconds: at}}},
	}
	return plots.Stacked(fmt.Sprintf("%s (shaded: faults)", r.Opt.Scenario), panels, path(r, "timeline.png"), spans...)
}
