package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/auth"
	"github.com/batchkv/batchkv/internal/cli"
	"github.com/batchkv/batchkv/internal/clustertest"
)

// TestHelpExitsZero: -help prints the usage, with real argument names,
// on stdout, and is not an error.
func TestHelpExitsZero(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"-help"}, &out, &errOut)
	require.ErrorIs(t, err, cli.ErrHelpShown)
	require.Equal(t, 0, cli.Exit(err))
	require.Contains(t, out.String(), "-tls-ca FILE")
	require.Contains(t, out.String(), "-join 127.0.0.1:8080")
	require.NotContains(t, out.String(), "kvsctl certs init\n", "a backquoted command read as the argument name")
	require.Empty(t, errOut.String())
	// A bad flag still fails, with the usage on stderr.
	out.Reset()
	err = run(context.Background(), []string{"-no-such-flag"}, &out, &errOut)
	require.Error(t, err)
	require.Equal(t, 1, cli.Exit(err))
	require.Contains(t, errOut.String(), "usage: kvsserver")
}

// TestRFWithoutPeersSaysHow: -rf 3 on its own says how many servers it
// needs and how to give them.
func TestRFWithoutPeersSaysHow(t *testing.T) {
	err := run(context.Background(), []string{"-rf", "3", "-port", "0"}, io.Discard, io.Discard)
	require.Error(t, err)
	for _, want := range []string{"-rf 3 keeps every shard on 3 servers", "only this one", "-peers 127.0.0.1:8080,127.0.0.2:8081,127.0.0.3:8082", "./run-cluster.sh 3 1"} {
		require.Contains(t, err.Error(), want)
	}
	err = run(context.Background(), []string{"-rf", "3", "-peers", "127.0.0.1:1,127.0.0.1:2", "-self", "127.0.0.1:1"}, io.Discard, io.Discard)
	require.ErrorContains(t, err, "there is 2 in -peers")
}

// TestCertMustNameDialledHost: a TLS server whose certificate does not
// name its -host (or -self) refuses to start and says how to issue one
// that does; one that names it starts.
func TestCertMustNameDialledHost(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, auth.InitCA(dir))
	require.NoError(t, auth.Issue(dir, "node0", auth.RoleNode, []string{"node0"}))
	require.NoError(t, auth.Issue(dir, "local", auth.RoleNode, []string{"127.0.0.1"}))
	tlsArgs := func(name string) []string {
		return []string{"-tls-ca", filepath.Join(dir, "ca.crt"), "-tls-cert", filepath.Join(dir, name+".crt"), "-tls-key", filepath.Join(dir, name+".key")}
	}
	// A server that starts serves until the context ends: give it a
	// deadline, so that a missing check fails here rather than hangs.
	bounded, stopBounded := context.WithTimeout(context.Background(), 3*time.Second)
	defer stopBounded()
	err := run(bounded, append([]string{"-port", "0", "-report", "0"}, tlsArgs("node0")...), io.Discard, io.Discard)
	require.Error(t, err, "a server whose certificate does not name its -host started")
	require.Contains(t, err.Error(), `names "node0", not 127.0.0.1 (-host)`)
	require.Contains(t, err.Error(), "kvsctl certs issue -dir DIR -name NAME -role node -hosts 127.0.0.1")

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	require.NoError(t, run(ctx, append([]string{"-port", "0", "-report", "0"}, tlsArgs("local")...), io.Discard, io.Discard))
}

// TestJoinLogsClusterLayout: a server started with -join logs the
// cluster's RF and shard count once it has them, not its own defaults.
func TestJoinLogsClusterLayout(t *testing.T) {
	addrs := startRF3(t, 6)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	require.NoError(t, ln.Close())
	ctx, cancel := context.WithCancel(context.Background())
	var logs clustertest.LogBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-port", port, "-join", addrs[0], "-data-dir", t.TempDir(), "-report", "0"}, io.Discard, &logs)
	}()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "msg=joined") }, 10*time.Second, 20*time.Millisecond, "%s", logs.String())
	cancel()
	require.NoError(t, <-done)
	out := logs.String()
	require.Contains(t, out, "msg=joined")
	require.Contains(t, out, " rf=3 shards=6 servers=3")
	require.NotContains(t, out, "rf=1", "the joiner's own -rf default is not the cluster's")
	require.Contains(t, out, "add-server 127.0.0.1:"+port)
}
