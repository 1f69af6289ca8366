package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/batchkv/batchkv/internal/plots"
)

// latencySeries are the lines of benchmark-latency.sh's figures: Redis
// under redis-benchmark and batchkv's Do, each for get and put, as the
// CSV names them (system, op).
var latencySeries = []struct{ system, op, name string }{
	{"redis", "get", "redis-benchmark get"},
	{"batchkv", "get", "batchkv Do get"},
	{"redis", "put", "redis-benchmark set"},
	{"batchkv", "put", "batchkv Do put"},
}

// latencyHeader is the first line of benchmark-latency.sh's CSV.
var latencyHeader = []string{"round", "system", "op", "p50_us", "p99_us"}

// readLatencyCSV reads benchmark-latency.sh's CSV (round, system, op,
// p50_us, p99_us) into one series per latencySeries entry for each
// percentile column: p50 and p99, each a point per round.
func readLatencyCSV(r io.Reader) (p50, p99 []plots.Series, err error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, nil, err
	}
	if len(rows) < 2 || !slices.Equal(rows[0], latencyHeader) {
		return nil, nil, fmt.Errorf("not a benchmark-latency.sh CSV: want the header %s and rows", strings.Join(latencyHeader, ","))
	}
	p50 = make([]plots.Series, len(latencySeries))
	p99 = make([]plots.Series, len(latencySeries))
	for i, s := range latencySeries {
		p50[i].Name, p99[i].Name = s.name, s.name
	}
	for n, row := range rows[1:] {
		var v [3]float64
		for j, f := range []string{row[0], row[3], row[4]} {
			if v[j], err = strconv.ParseFloat(f, 64); err != nil {
				return nil, nil, fmt.Errorf("row %d: %w", n+2, err)
			}
		}
		for i, s := range latencySeries {
			if row[1] == s.system && row[2] == s.op {
				p50[i].Points = append(p50[i].Points, plots.Point{X: v[0], Values: []float64{v[1]}})
				p99[i].Points = append(p99[i].Points, plots.Point{X: v[0], Values: []float64{v[2]}})
			}
		}
	}
	for i, s := range p50 {
		if len(s.Points) == 0 {
			return nil, nil, fmt.Errorf("no rows of %s %s", latencySeries[i].system, latencySeries[i].op)
		}
	}
	return p50, p99, nil
}

// latencyPlots draws each round's p50 and p99 of a benchmark-latency.sh
// run to out-p50.png and out-p99.png: the machine's quick and slow
// spells move both systems' lines together, and the gap between them is
// the comparison.
func latencyPlots(path, out string, stdout io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	p50, p99, err := readLatencyCSV(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, c := range []struct {
		pct    string
		series []plots.Series
	}{{"p50", p50}, {"p99", p99}} {
		png := out + "-" + c.pct + ".png"
		chart := plots.Chart{
			Title:  "a lone op's " + c.pct + " in each round (benchmark-latency.sh)",
			XLabel: "round",
			YLabel: c.pct + " latency (µs)",
			Series: c.series,
			// The lines sit well above the axis's zero.
			LegendBelow: true,
		}
		if err := plots.Lines(chart, png); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "wrote", png)
	}
	return nil
}
