package plots_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/vg"

	"github.com/batchkv/batchkv/internal/plots"
	"github.com/batchkv/batchkv/internal/plots/plotstest"
)

// requirePNG checks that path holds a PNG of w×h inches at plots.DPI with
// something drawn on it.
func requirePNG(t *testing.T, path string, w, h vg.Length) {
	t.Helper()
	img := plotstest.RequirePNG(t, path, w, h)
	// Not blank: something was drawn in more than one colour.
	colors := map[uint32]bool{}
	for y := 0; y < img.Bounds().Dy(); y += 7 {
		for x := 0; x < img.Bounds().Dx(); x += 7 {
			r, g, b, _ := img.At(x, y).RGBA()
			colors[r<<16^g<<8^b] = true
		}
	}
	require.Greater(t, len(colors), 2, "the image is blank")
}

func TestLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "batch.png")
	c := plots.Chart{
		Title: "throughput", XLabel: "batch size", YLabel: "ops/s", LogX: true,
		Series: []plots.Series{{Name: "total", Points: []plots.Point{
			{X: 1, Values: []float64{1e4, 1.2e4, 0.9e4}},
			{X: 64, Values: []float64{5e5}},
			{X: 8192, Values: []float64{4e6, 4.5e6, 4.2e6}},
		}}},
	}
	require.NoError(t, plots.Lines(c, path))
	requirePNG(t, path, plots.Width, plots.Height)

	c.LogY = true
	c.Series = append(c.Series, plots.Series{Name: "p99", Points: []plots.Point{{X: 1, Values: []float64{3}}, {X: 8192, Values: []float64{300}}}})
	require.NoError(t, plots.Lines(c, path))
	requirePNG(t, path, plots.Width, plots.Height)
}

func TestLinesRejectsEmptySeries(t *testing.T) {
	err := plots.Lines(plots.Chart{Series: []plots.Series{{Name: "none"}}}, filepath.Join(t.TempDir(), "x.png"))
	require.ErrorContains(t, err, "no points")
}

func TestBars(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scaling.png")
	require.NoError(t, plots.Bars("scaling", "ops/s", []string{"1x1", "2x2", "4x4"},
		[][]float64{{4e6, 4.2e6}, {2.3e6}, {1.1e6, 1.3e6, 1.2e6}}, path))
	requirePNG(t, path, plots.Width, plots.Height)
	require.Error(t, plots.Bars("x", "y", []string{"a"}, nil, path))
}

func TestStacked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "util.png")
	panels := []plots.Panel{
		{YLabel: "CPU %", Series: []plots.TimeSeries{{Name: "server", Values: []float64{10, 120, 125}}, {Name: "client", Values: []float64{5, 70, 72}}}},
		{YLabel: "RSS MiB", Series: []plots.TimeSeries{{Name: "server", Values: []float64{100, 700, 710}}}},
		{YLabel: "network MiB/s", Series: []plots.TimeSeries{{Name: "server rx", Values: []float64{1, 40, 41}}}},
	}
	require.NoError(t, plots.Stacked("run", panels, path))
	requirePNG(t, path, plots.Width, 3*plots.PanelHeight)
}

// TestStackedShadesSpans: a shaded span greys the pixels it covers, so
// the figure differs from the same one without it.
func TestStackedShadesSpans(t *testing.T) {
	dir := t.TempDir()
	panels := []plots.Panel{{YLabel: "ops/s", Series: []plots.TimeSeries{{Name: "ops", Values: []float64{5, 5, 1, 1, 5, 5}}}}}
	plain, shaded := filepath.Join(dir, "plain.png"), filepath.Join(dir, "shaded.png")
	require.NoError(t, plots.Stacked("run", panels, plain))
	require.NoError(t, plots.Stacked("run", panels, shaded, plots.Span{From: 3, To: 4, Label: "fault"}))
	requirePNG(t, shaded, plots.Width, plots.PanelHeight)
	a, err := os.ReadFile(plain)
	require.NoError(t, err)
	b, err := os.ReadFile(shaded)
	require.NoError(t, err)
	require.NotEqual(t, a, b)
}
