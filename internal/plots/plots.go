// Package plots renders the experiment figures as PNG with gonum/plot:
// throughput and latency against a swept parameter, the scaling bars, and
// one run's per-node utilization over time.
package plots

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// DPI of every PNG. A figure W×H vg.Inch is W*DPI × H*DPI pixels.
const DPI = 96

// Size of the single-panel figures.
const (
	Width  = 8 * vg.Inch
	Height = 5 * vg.Inch
)

// Point is one measurement of a sweep: x and the values of its repeats.
type Point struct {
	X      float64
	Values []float64
}

// Series is a named line of points.
type Series struct {
	Name   string
	Points []Point
}

// Chart describes a single-panel line chart.
type Chart struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool
	Series                []Series
	// LegendBelow puts the legend in the bottom left corner, for lines
	// that run high and level; by default it sits top left.
	LegendBelow bool
}

// summary returns the median of vs and how far the min and max lie below
// and above it.
func summary(vs []float64) (med, below, above float64) {
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		med = s[len(s)/2]
	} else {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return med, med - s[0], s[len(s)-1] - med
}

// errorPoints are a series' medians with min-max error bars.
type errorPoints struct {
	plotter.XYs
	plotter.YErrors
}

// Lines renders c to path as a PNG: one line per series through the
// medians of each point's repeats, with error bars from min to max.
func Lines(c Chart, path string) error {
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = c.YLabel
	if c.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if c.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	} else {
		p.Y.Min = 0
	}
	p.Add(plotter.NewGrid())
	for i, s := range c.Series {
		var pts errorPoints
		for _, pt := range s.Points {
			if len(pt.Values) == 0 || (c.LogX && pt.X <= 0) {
				continue
			}
			med, lo, hi := summary(pt.Values)
			if c.LogY && med-lo <= 0 {
				continue
			}
			pts.XYs = append(pts.XYs, plotter.XY{X: pt.X, Y: med})
			pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{lo, hi})
		}
		if len(pts.XYs) == 0 {
			return fmt.Errorf("plots: series %q has no points to draw", s.Name)
		}
		line, points, err := plotter.NewLinePoints(pts.XYs)
		if err != nil {
			return err
		}
		line.Color = plotutil.Color(i)
		points.Color = plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		bars, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return err
		}
		bars.Color = plotutil.Color(i)
		p.Add(line, points, bars)
		if len(c.Series) > 1 || s.Name != "" {
			p.Legend.Add(s.Name, line, points)
		}
	}
	// Top left unless LegendBelow: sweeps rise from left to right, so the
	// corner stays clear.
	p.Legend.Top, p.Legend.Left = !c.LegendBelow, true
	return save(path, Width, Height, [][]*plot.Plot{{p}})
}

// Bars renders one bar per label to path, each the median of its values
// with a min-max error bar.
func Bars(title, ylabel string, labels []string, values [][]float64, path string) error {
	if len(labels) == 0 || len(labels) != len(values) {
		return fmt.Errorf("plots: %d labels for %d bars", len(labels), len(values))
	}
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	meds := make(plotter.Values, len(values))
	var pts errorPoints
	for i, vs := range values {
		if len(vs) == 0 {
			return fmt.Errorf("plots: bar %q has no values", labels[i])
		}
		med, lo, hi := summary(vs)
		meds[i] = med
		pts.XYs = append(pts.XYs, plotter.XY{X: float64(i), Y: med})
		pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{lo, hi})
	}
	bars, err := plotter.NewBarChart(meds, vg.Points(40))
	if err != nil {
		return err
	}
	bars.Color = plotutil.Color(0)
	errs, err := plotter.NewYErrorBars(pts)
	if err != nil {
		return err
	}
	p.Add(bars, errs)
	p.NominalX(labels...)
	return save(path, Width, Height, [][]*plot.Plot{{p}})
}

// TimeSeries is one node's values over time.
type TimeSeries struct {
	Name   string
	Values []float64
	// Seconds gives each value's time; nil means 1, 2, 3, ...
	Seconds []float64
}

// Panel is one panel of a stacked time chart.
type Panel struct {
	YLabel string
	Series []TimeSeries
}

// PanelHeight is the height of each panel of Stacked.
const PanelHeight = 3 * vg.Inch

// Span is a shaded stretch of the time axis, such as a fault's window.
type Span struct {
	From, To float64 // seconds
	Label    string
}

// Stacked renders panels one above the other, sharing the time axis, to
// path: Width wide and PanelHeight per panel. Each span is shaded grey on
// every panel and named in the first panel's legend.
func Stacked(title string, panels []Panel, path string, spans ...Span) error {
	if len(panels) == 0 {
		return fmt.Errorf("plots: no panels")
	}
	grid := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		p := plot.New()
		if i == 0 {
			p.Title.Text = title
		}
		p.X.Label.Text = "seconds"
		p.Y.Label.Text = pn.YLabel
		p.Y.Min = 0
		p.Add(plotter.NewGrid())
		for j, s := range pn.Series {
			xys := make(plotter.XYs, 0, len(s.Values))
			for t, v := range s.Values {
				x := float64(t + 1)
				if s.Seconds != nil {
					x = s.Seconds[t]
				}
				if !math.IsNaN(v) {
					xys = append(xys, plotter.XY{X: x, Y: v})
				}
			}
			if len(xys) == 0 {
				continue
			}
			line, err := plotter.NewLine(xys)
			if err != nil {
				return err
			}
			line.Color = plotutil.Color(j)
			line.Dashes = plotutil.Dashes(j / len(plotutil.DefaultColors))
			p.Add(line)
			p.Legend.Add(s.Name, line)
		}
		if err := shade(p, spans, pn.Series, i == 0); err != nil {
			return err
		}
		p.Legend.Top = true
		grid[i] = []*plot.Plot{p}
	}
	// One time axis for all: panels whose first values are missing would
	// otherwise start later than the others.
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, row := range grid {
		lo, hi = min(lo, row[0].X.Min), max(hi, row[0].X.Max)
	}
	for _, row := range grid {
		row[0].X.Min, row[0].X.Max = lo, hi
	}
	return save(path, Width, PanelHeight*vg.Length(len(panels)), grid)
}

// spanColor is the shade of a Span: translucent, so lines show through.
var spanColor = color.NRGBA{R: 128, G: 128, B: 128, A: 56}

// shade adds spans to p, from 0 to just above the series' largest value, naming each
// distinct label in the legend when legend is set.
func shade(p *plot.Plot, spans []Span, series []TimeSeries, legend bool) error {
	if len(spans) == 0 {
		return nil
	}
	top := 0.0
	for _, s := range series {
		for _, v := range s.Values {
			if !math.IsNaN(v) {
				top = max(top, v)
			}
		}
	}
	if top = top * 1.05; top == 0 {
		top = 1
	}
	named := map[string]bool{}
	for _, sp := range spans {
		poly, err := plotter.NewPolygon(plotter.XYs{{X: sp.From, Y: 0}, {X: sp.To, Y: 0}, {X: sp.To, Y: top}, {X: sp.From, Y: top}})
		if err != nil {
			return err
		}
		poly.Color = spanColor
		poly.LineStyle.Width = 0
		p.Add(poly)
		if legend && sp.Label != "" && !named[sp.Label] {
			named[sp.Label] = true
			p.Legend.Add("shaded: "+sp.Label, poly)
		}
	}
	return nil
}

// save draws the grid of plots on one w×h canvas and writes it as a PNG.
func save(path string, w, h vg.Length, grid [][]*plot.Plot) error {
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(DPI), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(grid), Cols: len(grid[0]), PadY: vg.Points(8), PadX: vg.Points(8),
		PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	canvases := plot.Align(grid, tiles, dc)
	for i := range grid {
		for j, p := range grid[i] {
			p.Draw(canvases[i][j])
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
