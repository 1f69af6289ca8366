package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/internal/cli"
)

func serverLog(rates ...string) string {
	var b strings.Builder
	for _, r := range rates {
		b.WriteString("get/s 0\nput/s 0\nops/s " + r + "\nutil cpu% 50.0 rss_mib 100.0 rx_mib/s 1.00 tx_mib/s 2.00\n")
	}
	return b.String()
}

func TestReport(t *testing.T) {
	dir := t.TempDir()
	// Idle, preload and warm-up, steady state, a partial last second, idle.
	a := serverLog("0", "0", "900", "50", "70", "100", "300", "200", "10", "0")
	b := serverLog("0", "5", "5", "5", "400", "400", "400", "1", "0")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "server-node0.log"), []byte(a), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "server-node1.log"), []byte(b), 0o644))
	var out strings.Builder
	require.NoError(t, run([]string{filepath.Join(dir, "server-node0.log"), filepath.Join(dir, "server-node1.log")}, &out))
	// node0 loaded: 900 50 70 100 300 200 10 -> drop 3 and the last -> 100 300 200 -> 200.
	// node1 loaded: 5 5 5 400 400 400 1 -> 400 400 400 -> 400.
	require.Contains(t, out.String(), "node0 median 200 op/s\n")
	require.Contains(t, out.String(), "node1 median 400 op/s\n")
	require.True(t, strings.HasSuffix(out.String(), "total 600 op/s\n"), out.String())
	// 50% of a core for 200 op/s: 0.5 s / 200 ops = 2500 s per million ops;
	// 3 MiB/s over 200 op/s.
	require.Contains(t, out.String(), "node0 cpu% 50.0 rss_mib 100.0 rx_mib/s 1.00 tx_mib/s 2.00 cpu_s/Mops 2500.000 wire_bytes/op 15728.6")
}

func TestReportShortRunKeepsAllLoadedSamples(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "server-x.log")
	require.NoError(t, os.WriteFile(p, []byte(serverLog("0", "10", "30", "0")), 0o644))
	var out strings.Builder
	require.NoError(t, run([]string{p}, &out))
	require.Contains(t, out.String(), "x median 20 op/s")
}

func TestReportNeedsLogs(t *testing.T) {
	require.Error(t, run(nil, &strings.Builder{}))
	require.Error(t, run([]string{"/nonexistent/server.log"}, &strings.Builder{}))
}

// TestHelpExitsZero: -help prints the usage and is not an error.
func TestHelpExitsZero(t *testing.T) {
	var out strings.Builder
	err := run([]string{"-help"}, &out)
	require.ErrorIs(t, err, cli.ErrHelpShown)
	require.Equal(t, 0, cli.Exit(err))
	require.Contains(t, out.String(), "usage: kvsreport")
}
