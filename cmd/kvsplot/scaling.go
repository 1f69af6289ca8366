package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/batchkv/batchkv/internal/plots"
	"github.com/batchkv/batchkv/internal/runlog"
)

// scalingConfig is the rows of one servers×clients configuration.
type scalingConfig struct {
	servers, clients int
	rows             []runlog.Summary
}

func (c *scalingConfig) label() string { return fmt.Sprintf("%dx%d", c.servers, c.clients) }

func (c *scalingConfig) totals() []float64 {
	out := make([]float64, len(c.rows))
	for i, r := range c.rows {
		out[i] = r.TotalOps
	}
	return out
}

// meanCPU is the median over repeats of the mean CPU % per node.
func (c *scalingConfig) meanCPU(get func(runlog.Summary) []float64) float64 {
	var per []float64
	for _, r := range c.rows {
		if vs := get(r); len(vs) > 0 {
			sum := 0.0
			for _, v := range vs {
				sum += v
			}
			per = append(per, sum/float64(len(vs)))
		}
	}
	return runlog.Median(per)
}

// scalingPlots writes the scaling bar chart and Markdown table.
func scalingPlots(path, out string, stdout io.Writer) error {
	rows, err := readSummaries(path)
	if err != nil {
		return err
	}
	var configs []*scalingConfig
	for _, r := range rows {
		i := slices.IndexFunc(configs, func(c *scalingConfig) bool { return c.servers == r.Servers && c.clients == r.Clients })
		if i < 0 {
			configs = append(configs, &scalingConfig{servers: r.Servers, clients: r.Clients})
			i = len(configs) - 1
		}
		configs[i].rows = append(configs[i].rows, r)
	}
	labels := make([]string, len(configs))
	values := make([][]float64, len(configs))
	for i, c := range configs {
		labels[i], values[i] = c.label(), c.totals()
	}
	png := out + ".png"
	if err := plots.Bars("total throughput by servers x clients", "total ops/s (median, min-max over repeats)", labels, values, png); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "wrote", png)

	var b strings.Builder
	b.WriteString("| servers × clients | total ops/s (median) | min - max | per server | server CPU % (mean per server) | client CPU % (mean per client) | vs first row |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|\n")
	base := runlog.Median(configs[0].totals())
	for _, c := range configs {
		t := c.totals()
		m := runlog.Median(t)
		fmt.Fprintf(&b, "| %d × %d | %.0f | %.0f - %.0f | %.0f | %.0f | %.0f | %.2fx |\n",
			c.servers, c.clients, m, slices.Min(t), slices.Max(t), m/float64(c.servers),
			c.meanCPU(func(s runlog.Summary) []float64 { return s.ServerCPU }),
			c.meanCPU(func(s runlog.Summary) []float64 { return s.ClientCPU }), m/base)
	}
	md := out + ".md"
	if err := os.WriteFile(md, []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "wrote", md)
	_, err = io.WriteString(stdout, b.String())
	return err
}
