package runlog

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// serverLog and clientLog write logs in the formats the binaries print.
func serverLog(rates ...float64) string {
	var b strings.Builder
	b.WriteString("time=... level=INFO msg=serving addr=127.0.0.1:8080\n")
	for i, r := range rates {
		fmt.Fprintf(&b, "get/s %.2f\nput/s 0.00\nops/s %.2f\nutil cpu%% %d.0 rss_mib %d.0 rx_mib/s 1.00 tx_mib/s 2.00 unix_ms %d\n",
			r, r, 100+i, 500+i, 1000000+1000*int64(i))
	}
	return b.String()
}

func clientLog(rates ...float64) string {
	var b strings.Builder
	b.WriteString("config hosts=127.0.0.1:8080 workload=YCSB-B theta=0.99 secs=30 numClients=64 batchSize=1024 records=1000000\n")
	b.WriteString("preloaded 1000000 keys in 1.00s\n")
	for i, r := range rates {
		fmt.Fprintf(&b, "client ops/s %.2f\nutil cpu%% 70.0 rss_mib 600.0 rx_mib/s 3.00 tx_mib/s 4.00 unix_ms %d\n", r, 1002000+1000*int64(i))
	}
	b.WriteString("throughput 123456 ops/s\n")
	b.WriteString("batch latency p50 226.5ms p99 520.1ms p99.9 838.8ms max 960.1ms (23980 batches)\n")
	b.WriteString("client cpu_s/Mops 0.159 peak_rss_mib 666.9 failed_ops 0\n")
	return b.String()
}

func writeRun(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"server-127.0.0.1:8080.log": serverLog(0, 900, 50, 70, 100, 300, 200, 10, 0),
		"server-127.0.0.2:8081.log": serverLog(0, 5, 5, 5, 400, 400, 400, 1),
		"client-client0.log":        clientLog(10, 20, 30),
		"report.txt":                "not a log\n",
	}
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	return dir
}

func TestReadDir(t *testing.T) {
	r, err := ReadDir(writeRun(t))
	require.NoError(t, err)
	require.Len(t, r.Servers, 2)
	require.Len(t, r.Clients, 1)
	s := r.Servers[0]
	require.Equal(t, "127.0.0.1:8080", s.Name)
	require.Len(t, s.Samples, 9)
	require.Equal(t, Sample{Ops: 900, CPU: 101, RSS: 501, RxMiBs: 1, TxMiBs: 2, UnixMS: 1001000}, s.Samples[1])
	// Loaded: 900 50 70 100 300 200 10; drop 3 and the last: 100 300 200.
	require.Equal(t, 200.0, Medians(s.Steady(3)).Ops)
	require.Equal(t, 508.0, s.PeakRSSSample())

	c := r.Clients[0]
	require.Equal(t, "client0", c.Name)
	require.Equal(t, "1024", c.Config["batchSize"])
	require.Equal(t, 123456.0, c.Throughput)
	require.Equal(t, 226500*time.Microsecond, c.P50)
	require.Equal(t, 838800*time.Microsecond, c.P999)
	require.Equal(t, 0.159, c.CPUPerMops)
	require.Equal(t, Sample{Ops: 20, CPU: 70, RSS: 600, RxMiBs: 3, TxMiBs: 4, UnixMS: 1003000}, c.Samples[1])
}

func TestReadDirErrors(t *testing.T) {
	_, err := ReadDir(t.TempDir())
	require.ErrorContains(t, err, "no server-*.log")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "server-x.log"), []byte("ops/s notanumber\n"), 0o644))
	_, err = ReadDir(dir)
	require.ErrorContains(t, err, "line 1")
}

func TestSummaryRoundTrip(t *testing.T) {
	r, err := ReadDir(writeRun(t))
	require.NoError(t, err)
	var b bytes.Buffer
	b.WriteString(strings.Join(SummaryHeader, ",") + "\n")
	row := r.SummaryRow("batch", 2, 3)
	require.Len(t, row, len(SummaryHeader))
	require.Equal(t, "200.00;400.00", row[7], "per-server medians")
	b.WriteString(strings.Join(row, ",") + "\n")
	got, err := ReadSummaries(&b)
	require.NoError(t, err)
	require.Equal(t, []Summary{{
		Sweep: "batch", Repeat: 2, Servers: 2, Clients: 1, BatchSize: 1024, Goroutines: 64, TotalOps: 600,
		ServerCPU: []float64{105, 105}, ClientCPU: []float64{70}, P50: 226.5, P99: 520.1, P999: 838.8, LogDir: r.Dir,
	}}, got)

	_, err = ReadSummaries(strings.NewReader("a,b\n1,2\n"))
	require.ErrorContains(t, err, "not a summary CSV")
}

func TestWriteUtil(t *testing.T) {
	r, err := ReadDir(writeRun(t))
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, r.WriteUtil(&b))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Equal(t, strings.Join(UtilHeader, ","), lines[0])
	require.Len(t, lines, 1+9+8+3)
	require.Equal(t, "127.0.0.1:8080,server,2,900.00,101.00,501.00,1.00,2.00", lines[2])
	require.Equal(t, "client0,client,1,10.00,70.00,600.00,3.00,4.00", lines[18])
}
