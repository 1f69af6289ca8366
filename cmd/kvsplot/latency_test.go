package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/internal/plots"
	"github.com/batchkv/batchkv/internal/plots/plotstest"
)

// latencyCSV is two rounds of benchmark-latency.sh's CSV, with the legs
// the figures leave out (Put/Get, interleaved).
const latencyCSV = `round,system,op,p50_us,p99_us
1,redis,put,31.0,63.0
1,redis,get,23.0,55.0
1,batchkv,put,33.2,78.9
1,batchkv-auto,put,35.0,80.0
1,batchkv,get,45.9,93.4
1,batchkv-il,get,40.1,90.0
2,redis,put,39.0,87.0
2,redis,get,31.0,79.0
2,batchkv,put,63.4,117.5
2,batchkv,get,63.9,113.1
`

// TestLatencyCSVRoundByRound: each line is one system and op, a point per
// round, its p50 in one set and its p99 in the other; the other legs are
// left out.
func TestLatencyCSVRoundByRound(t *testing.T) {
	p50, p99, err := readLatencyCSV(strings.NewReader(latencyCSV))
	require.NoError(t, err)
	points := func(s plots.Series) [][2]float64 {
		var xy [][2]float64
		for _, p := range s.Points {
			require.Len(t, p.Values, 1)
			xy = append(xy, [2]float64{p.X, p.Values[0]})
		}
		return xy
	}
	names := []string{"redis-benchmark get", "batchkv Do get", "redis-benchmark set", "batchkv Do put"}
	want50 := [][][2]float64{{{1, 23}, {2, 31}}, {{1, 45.9}, {2, 63.9}}, {{1, 31}, {2, 39}}, {{1, 33.2}, {2, 63.4}}}
	want99 := [][][2]float64{{{1, 55}, {2, 79}}, {{1, 93.4}, {2, 113.1}}, {{1, 63}, {2, 87}}, {{1, 78.9}, {2, 117.5}}}
	require.Len(t, p50, len(names))
	for i, name := range names {
		require.Equal(t, name, p50[i].Name)
		require.Equal(t, name, p99[i].Name)
		require.Equal(t, want50[i], points(p50[i]), name)
		require.Equal(t, want99[i], points(p99[i]), name)
	}
}

func TestLatencyPlotsRefusesWhatIsNotItsCSV(t *testing.T) {
	const header = "round,system,op,p50_us,p99_us\n"
	for _, c := range []struct{ name, text, err string }{
		{"no header", "1,redis,get,23.0,55.0\n", "want the header round,system,op,p50_us,p99_us"},
		{"columns swapped", "round,system,op,p99_us,p50_us\n1,redis,get,55,23\n", "want the header"},
		{"header only", header, "want the header"},
		{"a bad number", header + "1,redis,get,fast,55.0\n", "row 2"},
		{"no batchkv put", header + "1,redis,get,23,55\n1,batchkv,get,20,50\n1,redis,put,23,55\n", "no rows of batchkv put"},
	} {
		_, _, err := readLatencyCSV(strings.NewReader(c.text))
		require.ErrorContains(t, err, c.err, c.name)
	}
	// One round (--quick) is a figure of one point a line.
	p50, _, err := readLatencyCSV(strings.NewReader(header + "1,redis,get,23,55\n1,batchkv,get,20,50\n1,redis,put,23,55\n1,batchkv,put,21,51\n"))
	require.NoError(t, err)
	for _, s := range p50 {
		require.Len(t, s.Points, 1, s.Name)
	}
}

func TestLatencyWritesBothFigures(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "latency.csv")
	require.NoError(t, os.WriteFile(csvPath, []byte(latencyCSV), 0o644))
	var out strings.Builder
	require.NoError(t, run([]string{"latency", "-out", filepath.Join(dir, "latency"), csvPath}, &out))
	plotstest.RequirePNG(t, filepath.Join(dir, "latency-p50.png"), plots.Width, plots.Height)
	plotstest.RequirePNG(t, filepath.Join(dir, "latency-p99.png"), plots.Width, plots.Height)
	require.Error(t, run([]string{"latency", "-out", filepath.Join(dir, "missing"), filepath.Join(dir, "missing.csv")}, &out))
}
