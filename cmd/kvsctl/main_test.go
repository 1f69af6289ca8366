package main

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/auth"
	"github.com/batchkv/batchkv/internal/cli"
	"github.com/batchkv/batchkv/internal/clustertest"
	"github.com/batchkv/batchkv/internal/tlsflags"
)

// TestHelp: -help lists every command and exits 0; help COMMAND and
// COMMAND -help explain one with an example; a mistake exits 2.
func TestHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run([]string{"-help"}, &out, &errOut)
	require.Equal(t, 0, exitStatus(err))
	for _, c := range commands {
		require.Contains(t, out.String(), "\n  "+c.name, "the overview lists %s", c.name)
	}
	require.Contains(t, out.String(), "-hosts host:port")
	require.Empty(t, errOut.String())

	for _, args := range [][]string{{"help", "move"}, {"move", "-help"}} {
		out.Reset()
		err = run(args, &out, io.Discard)
		require.Equal(t, 0, exitStatus(err), "%v", args)
		require.Contains(t, out.String(), "usage: kvsctl [flags] move SHARD ADDR")
		require.Contains(t, out.String(), "example:\n  kvsctl -hosts 127.0.0.1:8080 move 3 127.0.0.4:8083")
	}
	out.Reset()
	require.NoError(t, run([]string{"help", "probe"}, &out, io.Discard))
	require.Contains(t, out.String(), "longest time without an acknowledged write")
	for _, c := range commands {
		require.NotEmpty(t, c.example, c.name)
	}

	for _, args := range [][]string{nil, {"help", "nosuch"}, {"nosuch"}, {"get"}, {"put", "k"}, {"move", "3"}} {
		err := run(args, io.Discard, io.Discard)
		require.Error(t, err, "%v", args)
		require.Equal(t, 2, exitStatus(err), "%v", args)
		require.Contains(t, err.Error(), "kvsctl help", "%v: says where help is", args)
	}
}

// TestGetMissingKeyExits1: an absent key is exit status 1, a present
// one 0, an unreachable cluster 2.
func TestGetMissingKeyExits1(t *testing.T) {
	addr := startPlain(t, nil)
	var out bytes.Buffer
	require.NoError(t, run([]string{"-hosts", addr, "put", "k", "v"}, &out, io.Discard))
	out.Reset()
	require.NoError(t, run([]string{"-hosts", addr, "get", "k"}, &out, io.Discard))
	require.Equal(t, "v\n", out.String())
	out.Reset()
	err := run([]string{"-hosts", addr, "get", "nosuchkey"}, &out, io.Discard)
	require.Equal(t, 1, exitStatus(err))
	require.ErrorContains(t, err, `"nosuchkey": not found`)
	require.Empty(t, out.String(), "nothing on stdout for an absent key")
	err = run([]string{"-hosts", deadAddr(t), "-timeout", "1s", "get", "k"}, io.Discard, io.Discard)
	require.Equal(t, 2, exitStatus(err))
}

// TestTopOnceUnreachableFails: top -once when no server answers is an
// error; when one does, not.
func TestTopOnceUnreachableFails(t *testing.T) {
	require.ErrorContains(t, allUnreachable([]nodeSample{{err: io.EOF}, {err: io.EOF}}), "none of the 2 servers answered")
	require.NoError(t, allUnreachable([]nodeSample{{err: io.EOF}, {}}))
}

// TestMembershipOnFixedRing: map, add-server and replace-server against a
// cluster whose members cannot change say so, with no %!w, and print no
// "done" line for a change that did not happen.
func TestMembershipOnFixedRing(t *testing.T) {
	addr := startPlain(t, nil)
	for _, args := range [][]string{{"map"}, {"add-server", "127.0.0.9:1"}, {"replace-server", addr, "127.0.0.9:1"}} {
		var out bytes.Buffer
		err := run(append([]string{"-hosts", addr}, args...), &out, io.Discard)
		require.Error(t, err)
		require.NotContains(t, err.Error(), "%!")
		require.Contains(t, err.Error(), "members are fixed")
		require.Contains(t, err.Error(), "-rf above 1, -data-dir, or -in-memory")
		require.NotContains(t, out.String(), "done")
	}
	var out bytes.Buffer
	err := run([]string{"-hosts", deadAddr(t), "-timeout", "1s", "add-server", "127.0.0.9:1"}, &out, io.Discard)
	require.Error(t, err)
	require.Equal(t, 2, exitStatus(err))
	require.NotContains(t, out.String(), "done")
}

// TestMoveToAHolderIsANoOp: move SHARD ADDR where ADDR already holds a
// replica of SHARD (as after add-server) says so and succeeds.
func TestMoveToAHolderIsANoOp(t *testing.T) {
	addrs := startRF3(t, 3).Addrs()
	var out bytes.Buffer
	require.NoError(t, run([]string{"-hosts", addrs[0], "move", "1", addrs[2]}, &out, io.Discard))
	require.Contains(t, out.String(), "shard 1 already has a replica on "+addrs[2])
	require.Contains(t, out.String(), "nothing to move")
}

// TestProbeIsTitledAndBounded: probe prints a title, a line per write and
// a summary, and stops after -for. (The first write of a cluster just
// started waits for its leaders: about a second on a busy machine, so
// the probe runs for 3 s.)
func TestProbeIsTitledAndBounded(t *testing.T) {
	addrs := startRF3(t, 3).Addrs()
	var out clustertest.LogBuffer
	done := make(chan error, 1)
	go func() {
		done <- run([]string{"-hosts", addrs[0], "probe", "-for", "3s", "-interval", "20ms", "0"}, &out, io.Discard)
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("probe -for 3s still running after 15 s")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.True(t, strings.HasPrefix(lines[0], "# probe of shard 0: a write of key"), lines[0])
	require.Contains(t, lines[0], "for 3s")
	last := lines[len(lines)-1]
	require.Regexp(t, `^# \d+ writes: \d+ ok, \d+ failed; latency p50 .*longest time without an acknowledged write`, last)
	oks := 0
	for _, l := range lines[2 : len(lines)-1] {
		require.Regexp(t, `^(ok \d+ \d+\.\d|fail \d+ )`, l)
		if strings.HasPrefix(l, "ok ") {
			oks++
		}
	}
	require.Greater(t, oks, 5, "%s", out.String())
	require.Less(t, len(lines), 200, "bounded by -for")
	err := run([]string{"-hosts", addrs[0], "probe", "7"}, io.Discard, io.Discard)
	require.ErrorContains(t, err, "shards 0 to 2")
}

// TestCertsNodeDefaultsToLocalHosts: a node certificate issued without
// -hosts names the addresses a server with the default -host is dialled
// at.
func TestCertsNodeDefaultsToLocalHosts(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	require.NoError(t, run([]string{"certs", "init", "-dir", dir}, &out, io.Discard))
	require.NoError(t, run([]string{"certs", "issue", "-dir", dir, "-name", "node0", "-role", "node"}, &out, io.Discard))
	require.Contains(t, out.String(), "for 127.0.0.1, ::1, localhost")
	raw, err := os.ReadFile(filepath.Join(dir, "node0.crt"))
	require.NoError(t, err)
	block, _ := pem.Decode(raw)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	require.NoError(t, cert.VerifyHostname("127.0.0.1"))
	require.NoError(t, cert.VerifyHostname("localhost"))
	require.Equal(t, 0, cli.Exit(run([]string{"certs", "-help"}, io.Discard, io.Discard)))
}

// TestPlaintextToTLSNamesTheFlags: kvsctl without the TLS flags against
// a TLS server says the server wants TLS and which flags to give; with
// them against a plaintext server, that they must go.
func TestPlaintextToTLSNamesTheFlags(t *testing.T) {
	dir := t.TempDir()
	ids, err := auth.MakeLocal(dir, []string{"127.0.0.1"})
	require.NoError(t, err)
	tlsAddr, plainAddr := startPlain(t, ids.Node), startPlain(t, nil)
	err = tlsflags.Hint(run([]string{"-hosts", tlsAddr, "-timeout", "1s", "get", "k"}, io.Discard, io.Discard))
	require.ErrorContains(t, err, "speaks TLS only")
	require.ErrorContains(t, err, "give -tls-ca ca.crt -tls-cert NAME.crt -tls-key NAME.key")
	err = tlsflags.Hint(run([]string{"-hosts", plainAddr, "-timeout", "1s", "-tls-ca", filepath.Join(dir, "ca.crt"),
		"-tls-cert", filepath.Join(dir, "client.crt"), "-tls-key", filepath.Join(dir, "client.key"), "get", "k"}, io.Discard, io.Discard))
	require.ErrorContains(t, err, "does not speak TLS")
	require.ErrorContains(t, err, "leave out -tls-ca")
}
