package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/kvs/store"
)

// respRun runs kvsclient -protocol resp for two seconds against addr.
func respRun(t *testing.T, addr string, extra ...string) string {
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append([]string{"-protocol", "resp", "-hosts", addr, "-secs", "2", "-numClients", "8",
		"-batchSize", "256", "-records", "2000", "-seed", "7"}, extra...)
	require.NoError(t, run(ctx, args, &out), out.String())
	require.Regexp(t, `throughput [1-9]\d* ops/s`, out.String())
	require.Contains(t, out.String(), "failed_ops 0 ")
	return out.String()
}

// TestRESPLoadAgainstBatchkv: the standard load over RESP against a
// batchkv server preloads every key, and its checked history is
// linearizable.
func TestRESPLoadAgainstBatchkv(t *testing.T) {
	st, _ := store.New(store.DefaultKind)
	out := respRun(t, serve(t, st), "-check")
	require.Contains(t, out, "linearizable:")
	require.GreaterOrEqual(t, st.Len(), 2000)
}

// TestRESPLoadAgainstRedis: the same load against a real redis-server.
func TestRESPLoadAgainstRedis(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed (benchmark-resp.sh installs it)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	}, 5*time.Second, 20*time.Millisecond)
	out := respRun(t, addr)
	require.True(t, strings.Contains(out, "preloaded 2000 keys"), out)
}
