package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/internal/plots"
	"github.com/batchkv/batchkv/internal/plots/plotstest"
)

// TestGrowReport: a client that does 1000 ops/s, 400 in the one second
// while a spare is added, and 1200 after; grow reports the add's time,
// the median before, the lowest second during (40%), the median after
// and the resent ops, and draws grow.png.
func TestGrowReport(t *testing.T) {
	dir := t.TempDir()
	var c, s strings.Builder
	for i := range 12 {
		rate := 1000.0
		switch {
		case i == 7:
			rate = 400
		case i > 7:
			rate = 1200
		}
		fmt.Fprintf(&c, "client ops/s %f\nutil cpu%% 70.0 rss_mib 600.0 rx_mib/s 4.00 tx_mib/s 4.00 unix_ms %d\n", rate, 100_000+1000*i)
		fmt.Fprintf(&s, "get/s 0\nput/s 0\nops/s %f\nutil cpu%% 70.0 rss_mib 600.0 rx_mib/s 4.00 tx_mib/s 4.00 unix_ms %d\n", rate, 100_000+1000*i)
	}
	c.WriteString("throughput 1000 ops/s\nclient cpu_s/Mops 0.1 peak_rss_mib 1.0 failed_ops 0 resent_ops 321\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "client-client0.log"), []byte(c.String()), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "server-127.0.0.1:8080.log"), []byte(s.String()), 0o644))
	// The add runs from second 7 to the end of second 7.
	grow := "add-server 127.0.0.2:8081 at_unix_ms 107000\n12:00:00.000  127.0.0.2:8081 is a member\ngrown at_unix_ms 108000\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "grow.log"), []byte(grow), 0o644))
	var out strings.Builder
	require.NoError(t, run([]string{"grow", "-skip", "0", dir}, &out))
	require.Contains(t, out.String(), "spares added in 1.0 s")
	require.Contains(t, out.String(), "median before 1000, lowest second while adding 400 (40% of the median), median after 1200")
	require.Contains(t, out.String(), "resent by the clients (redirected or retried): 321")
	plotstest.RequirePNG(t, filepath.Join(dir, "grow.png"), plots.Width, plots.PanelHeight)

	// A run too short to have a second of load before the add still
	// reports the add's time.
	short := "add-server 127.0.0.2:8081 at_unix_ms 100500\ngrown at_unix_ms 100900\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "grow.log"), []byte(short), 0o644))
	out.Reset()
	require.NoError(t, run([]string{"grow", "-skip", "0", dir}, &out))
	require.Contains(t, out.String(), "spares added in 0.4 s")
	require.Contains(t, out.String(), "no second of load before the add")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "grow.log"), []byte("add-server x failed\n"), 0o644))
	require.Error(t, run([]string{"grow", dir}, &out), "a grow.log without times")
}
