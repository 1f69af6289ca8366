// Command kvsplot turns run logs and sweep results into CSV, Markdown and
// PNG figures (gonum/plot).
//
//	kvsplot run DIR                        DIR/util.csv and DIR/util.png: per-node CPU %, RSS, network over time
//	kvsplot row -sweep NAME -repeat N DIR  one summary CSV row for the run in DIR (-header: the header)
//	kvsplot sweep -x batch_size -out plots/batch results.csv
//	                                       plots/batch-throughput.png and plots/batch-latency.png
//	kvsplot scaling -out plots/scaling results.csv
//	                                       plots/scaling.png and plots/scaling.md
//	kvsplot latency -out DIR/latency DIR/latency.csv
//	                                       DIR/latency-p50.png and -p99.png:
//	                                       each round of benchmark-latency.sh
//
// The sweep scripts (benchmark-batch.sh, benchmark-clients.sh,
// benchmark-scaling.sh), benchmark-latency.sh and run-cluster.sh call it;
// it can be run by hand on any run's logs.
package main

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/batchkv/batchkv/internal/cli"
	"github.com/batchkv/batchkv/internal/plots"
	"github.com/batchkv/batchkv/internal/runlog"
)

func main() {
	err := run(os.Args[1:], os.Stdout)
	if err != nil && !errors.Is(err, cli.ErrHelpShown) {
		fmt.Fprintln(os.Stderr, "kvsplot:", err)
	}
	os.Exit(cli.Exit(err))
}

const usage = "usage: kvsplot run|row|sweep|scaling|grow|latency [flags] ARG (kvsplot CMD -h for its flags)"

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return cli.ErrHelpShown
	}
	fs := flag.NewFlagSet("kvsplot "+cmd, flag.ContinueOnError)
	skip := fs.Int("skip", 3, "loaded seconds to drop at the start of each log")
	switch cmd {
	case "run":
		if err := parseOne(fs, args, "DIR"); err != nil {
			return err
		}
		return runPlot(fs.Arg(0))
	case "row":
		sweep := fs.String("sweep", "run", "name of the sweep, first column")
		repeat := fs.Int("repeat", 1, "repeat number, second column")
		header := fs.Bool("header", false, "print the header instead of a row")
		if err := cli.Parse(fs, args, stdout, os.Stderr); err != nil {
			return err
		}
		w := csv.NewWriter(stdout)
		if *header {
			_ = w.Write(runlog.SummaryHeader)
		} else {
			if fs.NArg() != 1 {
				return errors.New("usage: kvsplot row [-sweep NAME] [-repeat N] DIR")
			}
			r, err := runlog.ReadDir(fs.Arg(0))
			if err != nil {
				return err
			}
			_ = w.Write(r.SummaryRow(*sweep, *repeat, *skip))
		}
		w.Flush()
		return w.Error()
	case "sweep":
		x := fs.String("x", "batch_size", "the swept column: batch_size or goroutines")
		out := fs.String("out", "plots/sweep", "path prefix of the PNGs")
		title := fs.String("title", "", "title of the figures (default from -x)")
		if err := parseOne(fs, args, "CSV"); err != nil {
			return err
		}
		return sweepPlots(fs.Arg(0), *x, *title, *out, stdout)
	case "grow":
		if err := parseOne(fs, args, "DIR"); err != nil {
			return err
		}
		return growReport(fs.Arg(0), *skip, stdout)
	case "scaling":
		out := fs.String("out", "plots/scaling", "path prefix of the PNG and the Markdown table")
		if err := parseOne(fs, args, "CSV"); err != nil {
			return err
		}
		return scalingPlots(fs.Arg(0), *out, stdout)
	case "latency":
		out := fs.String("out", "latency", "path prefix of the PNGs")
		if err := parseOne(fs, args, "CSV"); err != nil {
			return err
		}
		return latencyPlots(fs.Arg(0), *out, stdout)
	}
	return fmt.Errorf("unknown command %q; %s", cmd, usage)
}

func parseOne(fs *flag.FlagSet, args []string, what string) error {
	if err := cli.Parse(fs, args, os.Stdout, os.Stderr); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: %s [flags] %s", fs.Name(), what)
	}
	return nil
}

// runPlot writes a run's utilization CSV and plot into its directory.
func runPlot(dir string) error {
	r, err := runlog.ReadDir(dir)
	if err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "util.csv"))
	if err != nil {
		return err
	}
	if err := r.WriteUtil(f); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	nodes := append(append([]*runlog.Node{}, r.Servers...), r.Clients...)
	// Samples carry their wall-clock time (unix_ms), so servers' and
	// clients' lines line up; count seconds from the run's first sample.
	var t0 int64
	for _, n := range nodes {
		for _, s := range n.Samples {
			if s.UnixMS > 0 && (t0 == 0 || s.UnixMS < t0) {
				t0 = s.UnixMS
			}
		}
	}
	series := func(get func(runlog.Sample) float64, suffix string) []plots.TimeSeries {
		var out []plots.TimeSeries
		for _, n := range nodes {
			ts := plots.TimeSeries{Name: string(n.Role) + " " + n.Name + suffix}
			for i, s := range n.Samples {
				ts.Values = append(ts.Values, get(s))
				if t0 > 0 {
					sec := float64(i + 1)
					if s.UnixMS > 0 {
						sec = float64(s.UnixMS-t0)/1000 + 1
					}
					ts.Seconds = append(ts.Seconds, sec)
				}
			}
			out = append(out, ts)
		}
		return out
	}
	panels := []plots.Panel{
		{YLabel: "ops/s", Series: series(func(s runlog.Sample) float64 { return s.Ops }, "")},
		{YLabel: "CPU % (100 = one core)", Series: series(func(s runlog.Sample) float64 { return s.CPU }, "")},
		{YLabel: "RSS MiB", Series: series(func(s runlog.Sample) float64 { return s.RSS }, "")},
		{YLabel: "network MiB/s", Series: append(
			series(func(s runlog.Sample) float64 { return s.RxMiBs }, " rx"),
			series(func(s runlog.Sample) float64 { return s.TxMiBs }, " tx")...)},
	}
	name := filepath.Base(filepath.Clean(dir))
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		name = filepath.Base(real)
	}
	return plots.Stacked("per-node utilization, run "+name, panels, filepath.Join(dir, "util.png"))
}

func readSummaries(path string) ([]runlog.Summary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := runlog.ReadSummaries(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no rows", path)
	}
	return rows, nil
}

// sweepPlots draws throughput and latency against the swept column.
func sweepPlots(path, x, title, out string, stdout io.Writer) error {
	rows, err := readSummaries(path)
	if err != nil {
		return err
	}
	var xOf func(runlog.Summary) float64
	var xLabel string
	switch x {
	case "batch_size":
		xOf, xLabel = func(s runlog.Summary) float64 { return float64(s.BatchSize) }, "ops per batch"
	case "goroutines":
		xOf, xLabel = func(s runlog.Summary) float64 { return float64(s.Goroutines) }, "goroutines per client"
	default:
		return fmt.Errorf("-x %q: want batch_size or goroutines", x)
	}
	if title == "" {
		title = "throughput against " + xLabel
	}
	group := func(get func(runlog.Summary) float64) []plots.Point {
		byX := map[float64][]float64{}
		for _, r := range rows {
			byX[xOf(r)] = append(byX[xOf(r)], get(r))
		}
		var pts []plots.Point
		for xv, vs := range byX {
			pts = append(pts, plots.Point{X: xv, Values: vs})
		}
		sort.Slice(pts, func(i, j int) bool { return pts[i].X < pts[j].X })
		return pts
	}
	tp := plots.Chart{
		Title: title, XLabel: xLabel + " (log scale)", YLabel: "total ops/s (median, min-max over repeats)", LogX: true,
		Series: []plots.Series{{Name: "total ops/s", Points: group(func(s runlog.Summary) float64 { return s.TotalOps })}},
	}
	lat := plots.Chart{
		Title: "batch round-trip latency against " + xLabel, XLabel: xLabel + " (log scale)", YLabel: "ms (log scale)", LogX: true, LogY: true,
		Series: []plots.Series{
			{Name: "p50", Points: group(func(s runlog.Summary) float64 { return s.P50 })},
			{Name: "p99", Points: group(func(s runlog.Summary) float64 { return s.P99 })},
			{Name: "p99.9", Points: group(func(s runlog.Summary) float64 { return s.P999 })},
		},
	}
	for _, f := range []struct {
		c    plots.Chart
		path string
	}{{tp, out + "-throughput.png"}, {lat, out + "-latency.png"}} {
		if err := plots.Lines(f.c, f.path); err != nil {
			return fmt.Errorf("%s: %w", f.path, err)
		}
		fmt.Fprintln(stdout, "wrote", f.path)
	}
	return nil
}
