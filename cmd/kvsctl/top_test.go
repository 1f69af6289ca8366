package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/auth"
	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/wire"
)

// load writes and reads keys of every shard until stop is closed.
func load(t *testing.T, addrs []string, stop <-chan struct{}) {
	cl, err := client.New(client.Config{Servers: addrs, Shards: 3, RF: 3})
	if err != nil {
		t.Error(err)
		return
	}
	defer cl.Close()
	ops := make([]wire.Op, 256)
	for b := 0; ; b++ {
		select {
		case <-stop:
			return
		default:
		}
		for i := range ops {
			code := wire.OpGet
			if i%4 == 0 {
				code = wire.OpPut
			}
			ops[i] = wire.Op{Code: code, Key: fmt.Sprintf("k%d", (b*len(ops)+i)%5000), Value: "v"}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = cl.Do(ctx, ops)
		cancel()
	}
}

// nodeOps returns the OPS/S column of each node row of a top table.
func nodeOps(out string) map[string]float64 {
	rates := map[string]float64{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasPrefix(f[0], "127.0.0.1:") || f[1] == "unreachable:" {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			rates[f[0]] = v
		}
	}
	return rates
}

// TestTopOnceShowsEveryNodeUnderLoad: kvsctl top -once against a loaded
// RF=3 cluster prints a row per server, each with ops/s above zero, and
// a row per shard naming its leader and each replica's lag.
func TestTopOnceShowsEveryNodeUnderLoad(t *testing.T) {
	addrs := startRF3(t, 3).Addrs()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); load(t, addrs, stop) }()
	}
	defer func() { close(stop); wg.Wait() }()
	var out bytes.Buffer
	require.Eventually(t, func() bool {
		out.Reset()
		if err := run([]string{"-hosts", addrs[0], "top", "-once", "-interval", "500ms"}, &out, io.Discard); err != nil {
			return false
		}
		rates := nodeOps(out.String())
		for _, a := range addrs {
			if rates[a] <= 0 {
				return false
			}
		}
		return true
	}, 30*time.Second, 100*time.Millisecond, "every node serves ops")
	text := out.String()
	require.Contains(t, text, "CPU%")
	// BUF_MIB, the 8th column: under load at RF=3 the Raft log caches hold
	// entries on every server.
	require.Contains(t, text, "BUF_MIB")
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) > 7 && slices.Contains(addrs, f[0]) {
			buf, err := strconv.ParseFloat(f[7], 64)
			require.NoError(t, err, line)
			require.Positive(t, buf, "BUF_MIB of %s", f[0])
		}
	}
	require.Regexp(t, `(?m)^total\s+\d+`, text)
	for sh := range 3 {
		require.Regexp(t, fmt.Sprintf(`(?m)^%d\s+127\.0\.0\.1:\d+\s+\d+\s+\d+\s+127`, sh), text, "shard %d has a leader and lags", sh)
	}
	for _, a := range addrs {
		require.Contains(t, text, a+"=", "lag of replica %s", a)
	}
}

// TestTopShowsAnUnreachableServer: a server that does not answer gets a
// row saying so, and the others are still shown.
func TestTopShowsAnUnreachableServer(t *testing.T) {
	c := startRF3(t, 3)
	addrs := c.Addrs()
	c.Stop(2)
	var out bytes.Buffer
	require.NoError(t, run([]string{"-hosts", addrs[0], "top", "-once", "-interval", "200ms"}, &out, io.Discard))
	require.Regexp(t, `(?m)^`+addrs[2]+`\s+unreachable`, out.String())
	rates := nodeOps(out.String())
	require.Contains(t, rates, addrs[0])
	require.Contains(t, rates, addrs[1])
}

// TestTopOverTLS: against a TLS cluster, top dials with the -tls-* flags
// and shows the server; without them it cannot.
func TestTopOverTLS(t *testing.T) {
	dir := t.TempDir()
	certs, err := auth.MakeLocal(dir, []string{"127.0.0.1"})
	require.NoError(t, err)
	addr := startPlain(t, certs.Node)
	var out bytes.Buffer
	require.NoError(t, run([]string{"-hosts", addr, "-tls-ca", filepath.Join(dir, auth.CACertFile),
		"-tls-cert", filepath.Join(dir, "client.crt"), "-tls-key", filepath.Join(dir, "client.key"),
		"top", "-once", "-interval", "200ms"}, &out, io.Discard))
	require.Contains(t, nodeOps(out.String()), addr, out.String())
	require.Error(t, run([]string{"-hosts", addr, "-timeout", "1s", "top", "-once"}, io.Discard, io.Discard), "plaintext to a TLS server")
}

// TestTopRatesSkipARestart: counters that started anew between two samples
// give no rate, rather than a negative or huge one.
func TestTopRatesSkipARestart(t *testing.T) {
	t0 := time.Now()
	a := nodeSample{st: wire.StatusReply{Node: &wire.NodeStats{At: t0, Started: t0.Add(-time.Hour), Gets: 1000}}}
	b := nodeSample{st: wire.StatusReply{Node: &wire.NodeStats{At: t0.Add(time.Second), Started: t0.Add(-time.Hour), Gets: 3000}}}
	r, ok := rates(a, b)
	require.True(t, ok)
	require.InDelta(t, 2000, r.gets, 1e-6)
	b.st.Node.Started = t0.Add(time.Second / 2)
	b.st.Node.Gets = 10
	_, ok = rates(a, b)
	require.False(t, ok)
}
