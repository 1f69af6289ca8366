package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/internal/cli"
	"github.com/batchkv/batchkv/internal/plots"
	"github.com/batchkv/batchkv/internal/plots/plotstest"
)

// fakeRun writes a run directory with one server and one client whose
// client used the given batch size and goroutines.
func fakeRun(t *testing.T, batch, goroutines int, rate float64) string {
	t.Helper()
	dir := t.TempDir()
	var s, c strings.Builder
	fmt.Fprintf(&c, "config hosts=127.0.0.1:8080 workload=YCSB-B numClients=%d batchSize=%d\n", goroutines, batch)
	for i := range 8 {
		fmt.Fprintf(&s, "get/s %f\nput/s 0\nops/s %f\nutil cpu%% 120.0 rss_mib 700.0 rx_mib/s 40.00 tx_mib/s 400.00 unix_ms %d\n", rate, rate, 5000+1000*i)
		fmt.Fprintf(&c, "client ops/s %f\nutil cpu%% 70.0 rss_mib 600.0 rx_mib/s 400.00 tx_mib/s 40.00 unix_ms %d\n", rate, 5500+1000*i)
	}
	fmt.Fprintf(&c, "throughput %.0f ops/s\nbatch latency p50 %dms p99 %dms p99.9 %dms max 1s (10 batches)\nclient cpu_s/Mops 0.15 peak_rss_mib 600.0 failed_ops 0\n",
		rate, batch/10+1, batch/5+2, batch/4+3)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "server-127.0.0.1:8080.log"), []byte(s.String()), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "client-client0.log"), []byte(c.String()), 0o644))
	return dir
}

func TestRunWritesUtilization(t *testing.T) {
	dir := fakeRun(t, 8192, 128, 4e6)
	var out strings.Builder
	require.NoError(t, run([]string{"run", dir}, &out))
	csv, err := os.ReadFile(filepath.Join(dir, "util.csv"))
	require.NoError(t, err)
	require.Equal(t, 1+8+8, strings.Count(string(csv), "\n"))
	plotstest.RequirePNG(t, filepath.Join(dir, "util.png"), plots.Width, 4*plots.PanelHeight)
}

func TestSweepAndScaling(t *testing.T) {
	var rows strings.Builder
	require.NoError(t, run([]string{"row", "-header"}, &rows))
	for _, batch := range []int{1, 64, 8192} {
		for rep := 1; rep <= 2; rep++ {
			require.NoError(t, run([]string{"row", "-sweep", "batch", "-repeat", fmt.Sprint(rep), fakeRun(t, batch, 128, float64(batch*100+rep))}, &rows))
		}
	}
	out := t.TempDir()
	csvPath := filepath.Join(out, "batch.csv")
	require.NoError(t, os.WriteFile(csvPath, []byte(rows.String()), 0o644))

	var msg strings.Builder
	require.NoError(t, run([]string{"sweep", "-x", "batch_size", "-out", filepath.Join(out, "batch"), csvPath}, &msg))
	plotstest.RequirePNG(t, filepath.Join(out, "batch-throughput.png"), plots.Width, plots.Height)
	plotstest.RequirePNG(t, filepath.Join(out, "batch-latency.png"), plots.Width, plots.Height)

	require.NoError(t, run([]string{"scaling", "-out", filepath.Join(out, "scaling"), csvPath}, &msg))
	plotstest.RequirePNG(t, filepath.Join(out, "scaling.png"), plots.Width, plots.Height)
	md, err := os.ReadFile(filepath.Join(out, "scaling.md"))
	require.NoError(t, err)
	// All six runs are 1 server x 1 client: one row, median (6401+6402)/2.
	require.Contains(t, string(md), "| 1 × 1 | 6402 | 101 - 819202 |")

	require.ErrorContains(t, run([]string{"sweep", "-x", "nope", csvPath}, &msg), "want batch_size or goroutines")
	require.Error(t, run([]string{"frobnicate"}, &msg))
	require.Error(t, run(nil, &msg))
}

// TestHelpExitsZero: -help, alone or after a command, prints the usage
// and is not an error.
func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{"-help"}, {"help"}, {"grow", "-h"}} {
		var out strings.Builder
		err := run(args, &out)
		require.ErrorIs(t, err, cli.ErrHelpShown, "%v", args)
		require.Equal(t, 0, cli.Exit(err))
	}
}
