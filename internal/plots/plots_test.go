package plots

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/vg"
)

// requirePNG checks that path holds a PNG of w×h inches at DPI.
func requirePNG(t *testing.T, path string, w, h vg.Length) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	require.Equal(t, int(w/vg.Inch*DPI+0.5), img.Bounds().Dx())
	require.Equal(t, int(h/vg.Inch*DPI+0.5), img.Bounds().Dy())
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
	c := Chart{
		Title: "throughput", XLabel: "batch size", YLabel: "ops/s", LogX: true,
		Series: []Series{{Name: "total", Points: []Point{
			{X: 1, Values: []float64{1e4, 1.2e4, 0.9e4}},
			{X: 64, Values: []float64{5e5}},
			{X: 8192, Values: []float64{4e6, 4.5e6, 4.2e6}},
		}}},
	}
	require.NoError(t, Lines(c, path))
	requirePNG(t, path, Width, Height)

	c.LogY = true
	c.Series = append(c.Series, Series{Name: "p99", Points: []Point{{X: 1, Values: []float64{3}}, {X: 8192, Values: []float64{300}}}})
	require.NoError(t, Lines(c, path))
	requirePNG(t, path, Width, Height)
}

func TestLinesRejectsEmptySeries(t *testing.T) {
	err := Lines(Chart{Series: []Series{{Name: "none"}}}, filepath.Join(t.TempDir(), "x.png"))
	require.ErrorContains(t, err, "no points")
}

func TestBars(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scaling.png")
	require.NoError(t, Bars("scaling", "ops/s", []string{"1x1", "2x2", "4x4"},
		[][]float64{{4e6, 4.2e6}, {2.3e6}, {1.1e6, 1.3e6, 1.2e6}}, path))
	requirePNG(t, path, Width, Height)
	require.Error(t, Bars("x", "y", []string{"a"}, nil, path))
}

func TestStacked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "util.png")
	panels := []Panel{
		{YLabel: "CPU %", Series: []TimeSeries{{Name: "server", Values: []float64{10, 120, 125}}, {Name: "client", Values: []float64{5, 70, 72}}}},
		{YLabel: "RSS MiB", Series: []TimeSeries{{Name: "server", Values: []float64{100, 700, 710}}}},
		{YLabel: "network MiB/s", Series: []TimeSeries{{Name: "server rx", Values: []float64{1, 40, 41}}}},
	}
	require.NoError(t, Stacked("run", panels, path))
	requirePNG(t, path, Width, 3*PanelHeight)
}
