package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"github.com/batchkv/batchkv/internal/plots"
	"github.com/batchkv/batchkv/internal/runlog"
)

// growTimes are when run-cluster.sh's grow step started adding spares and
// when the last add-server ended, from grow.log's "at_unix_ms" lines.
type growTimes struct{ from, to int64 }

var atUnixMS = regexp.MustCompile(`^(add-server \S+|grown) at_unix_ms (\d+)`)

func readGrowLog(path string) (growTimes, error) {
	f, err := os.Open(path)
	if err != nil {
		return growTimes{}, err
	}
	defer func() { _ = f.Close() }()
	var g growTimes
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := atUnixMS.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ms, _ := strconv.ParseInt(m[2], 10, 64)
		if m[1] == "grown" {
			g.to = ms
		} else if g.from == 0 {
			g.from = ms
		}
	}
	if g.from == 0 || g.to < g.from {
		return g, fmt.Errorf("%s: no add-server and grown times", path)
	}
	return g, sc.Err()
}

var resentOps = regexp.MustCompile(`resent_ops (\d+)`)

// growReport prints the figures of a run-cluster.sh --grow-at run and
// writes grow.png: the clients' total ops/s and every server's, per
// second, with the time the spares were being added shaded.
func growReport(dir string, skip int, stdout io.Writer) error {
	r, err := runlog.ReadDir(dir)
	if err != nil {
		return err
	}
	g, err := readGrowLog(filepath.Join(dir, "grow.log"))
	if err != nil {
		return err
	}
	// The clients' ops, summed per wall-clock second.
	total := map[int64]float64{}
	for _, c := range r.Clients {
		for i, s := range c.Samples {
			if i >= skip && s.UnixMS > 0 {
				total[s.UnixMS/1000] += s.Ops
			}
		}
	}
	if len(total) == 0 {
		return fmt.Errorf("%s: no client samples", dir)
	}
	// Seconds wholly before the add, seconds that overlap it, and
	// seconds wholly after it.
	var before, during, after []float64
	for sec, ops := range total {
		switch ms := sec * 1000; {
		case ms+1000 <= g.from:
			before = append(before, ops)
		case ms >= g.to:
			after = append(after, ops)
		default:
			during = append(during, ops)
		}
	}
	fmt.Fprintf(stdout, "grow: spares added in %.1f s\n", float64(g.to-g.from)/1000)
	if len(before) == 0 || len(during) == 0 {
		fmt.Fprintf(stdout, "grow: no second of load before the add to compare with (a run too short)\n")
	} else {
		med := runlog.Median(before)
		low := slices.Min(during)
		fmt.Fprintf(stdout, "grow: client ops/s median before %.0f, lowest second while adding %.0f (%.0f%% of the median), median after %.0f\n",
			med, low, 100*low/med, runlog.Median(after))
	}
	var resent int64
	for _, c := range r.Clients {
		raw, err := os.ReadFile(filepath.Join(dir, "client-"+c.Name+".log"))
		if err != nil {
			continue
		}
		if m := resentOps.FindSubmatch(raw); m != nil {
			n, _ := strconv.ParseInt(string(m[1]), 10, 64)
			resent += n
		}
	}
	fmt.Fprintf(stdout, "grow: ops resent by the clients (redirected or retried): %d\n", resent)

	secs := make([]int64, 0, len(total))
	for sec := range total {
		secs = append(secs, sec)
	}
	slices.Sort(secs)
	t0 := min(secs[0]*1000, g.from) - 1000
	var clientSeries plots.TimeSeries
	clientSeries.Name = "clients, total"
	for _, sec := range secs {
		clientSeries.Seconds = append(clientSeries.Seconds, float64(sec*1000-t0)/1000)
		clientSeries.Values = append(clientSeries.Values, total[sec])
	}
	series := []plots.TimeSeries{clientSeries}
	for _, n := range r.Servers {
		ts := plots.TimeSeries{Name: "server " + n.Name}
		for _, s := range n.Samples {
			if s.UnixMS > t0 {
				ts.Seconds = append(ts.Seconds, float64(s.UnixMS-t0)/1000)
				ts.Values = append(ts.Values, s.Ops)
			}
		}
		series = append(series, ts)
	}
	span := plots.Span{From: float64(g.from-t0) / 1000, To: float64(g.to-t0) / 1000, Label: "adding"}
	name := filepath.Base(filepath.Clean(dir))
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		name = filepath.Base(real)
	}
	return plots.Stacked("ops/s while servers are added, run "+name,
		[]plots.Panel{{YLabel: "ops/s", Series: series}}, filepath.Join(dir, "grow.png"), span)
}
