package kvs_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/rpc"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/clustertest"
	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/wire"
)

// Peers that try to make a server hold memory, file descriptors or
// goroutines it should not. Each test runs a real server on loopback.

// startServer serves cfg on 127.0.0.1 and returns its address.
func startServer(t *testing.T, cfg kvs.Config) (*kvs.Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Replicated() && cfg.Self == "" {
		cfg.Self = ln.Addr().String()
	}
	srv, err := kvs.New(cfg)
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return srv, ln.Addr().String()
}

// heapPeak samples the heap until stop is closed and returns its peak.
func heapPeak(stop <-chan struct{}, sofar *atomic.Uint64) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		var peak uint64
		var ms runtime.MemStats
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			sofar.Store(peak)
			select {
			case <-stop:
				out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

func heapNow() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// binaryFrame encodes a BatchOp request frame of the binary codec.
func binaryFrame(seq uint64, args *wire.BatchArgs) []byte {
	body := wire.AppendBatchArgs(nil, args)
	f := binary.LittleEndian.AppendUint32(nil, uint32(8+1+len(body)))
	f = binary.LittleEndian.AppendUint64(f, seq)
	f = append(f, 1) // BatchOp
	return append(f, body...)
}

// pipelineBigReads sends n pipelined batches of 62 gets of key (each
// reply holds 62 MiB of values) on a connection that never reads.
func pipelineBigReads(t *testing.T, addr, key string, n int) net.Conn {
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(4096))
	ops := make([]wire.Op, 62)
	for i := range ops {
		ops[i] = wire.Op{Code: wire.OpGet, Key: key}
	}
	out := []byte(wire.Preamble)
	for i := range n {
		out = append(out, binaryFrame(uint64(i+1), &wire.BatchArgs{Ops: ops})...)
	}
	_, err = conn.Write(out)
	require.NoError(t, err)
	return conn
}

// pipelinedPeak runs the pipelined-read attack against a server with the
// given limits and returns the heap's growth at its peak and how long
// another client took to be served meanwhile. It gives the attack settle
// to build its replies, or less once the heap has grown by enough (0:
// the whole of settle).
func pipelinedPeak(t *testing.T, limits kvs.Limits, requests int, settle time.Duration, enough uint64) (uint64, time.Duration) {
	_, addr := startServer(t, kvs.Config{Limits: limits})
	cl, err := client.New(client.Config{Servers: []string{addr}})
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, cl.Put(ctx, "big", strings.Repeat("x", wire.MaxValueBytes)))
	base := heapNow()
	stop := make(chan struct{})
	var sofar atomic.Uint64
	peak := heapPeak(stop, &sofar)
	conn := pipelineBigReads(t, addr, "big", requests)
	defer conn.Close()
	// The attack's replies are built, or wait for budget.
	for end := time.Now().Add(settle); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if enough > 0 && sofar.Load() > base+enough {
			break
		}
	}
	// Another client is served while the attacker holds its replies
	// (asked only with budgets: without, the attack may hold the server).
	var served time.Duration
	if enough == 0 {
		start := time.Now()
		require.NoError(t, cl.Put(ctx, "small", "v"))
		v, err := cl.Get(ctx, "small")
		require.NoError(t, err)
		require.Equal(t, "v", v)
		served = time.Since(start)
	}
	close(stop)
	growth := max(<-peak, base) - base
	t.Logf("%d pipelined 62 MiB reads: heap grew by %d MiB at its peak; another client served in %v", requests, growth>>20, served)
	return growth, served
}

// TestPipelinedRepliesStayWithinBudget: 16 pipelined requests, each
// reading 62 MiB, on a connection that never reads its replies, used to
// pin 62 MiB each (2.4 GB for 6 before the reply budget). Now the
// connection's budget stops it once a few replies are built (the few
// build slots bound the overshoot), the heap stays under 900 MiB at its
// peak, garbage included (510-650 MiB measured), and another client is
// served meanwhile. With the budgets made too large to act, twice the
// attack takes more than that bound (1.6-2.4 GiB measured), which shows
// the budget is what holds it: the check is that it crosses the bound the
// budgets keep to (on a machine busy with the other tests it grew 1.15
// GiB within the test's wait, against 1.6-2.4 GiB alone).
func TestPipelinedRepliesStayWithinBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates about 2 GiB")
	}
	const requests, bound = 16, uint64(900 << 20)
	// The attacker's writes wait up to 20 s before its connection is cut:
	// a client held up by it would wait that long, one that is not waits
	// a millisecond or two (1.9 s once, under .ci/run while it compiled).
	bounded, served := pipelinedPeak(t, kvs.Limits{WriteTimeout: 20 * time.Second}, requests, 1500*time.Millisecond, 0)
	require.Less(t, bounded, bound, "heap growth under the default budgets")
	require.Less(t, served, 5*time.Second, "another client waited on the attacker")

	// Without budgets nothing holds the attack back, and the machine is
	// busy allocating it: only the growth is checked. Under go test ./...
	// on 2 cores it grew only 241 MiB in 1.5 s once: it is given up to
	// 10 s to pass the bound.
	// Twice the requests: 16 pin 992 MiB at most, too near the bound.
	unbounded, _ := pipelinedPeak(t, kvs.Limits{WriteTimeout: 3 * time.Second, ReplyBudget: 1 << 40, ConnReplyBudget: 1 << 40},
		2*requests, 10*time.Second, bound)
	require.Greater(t, unbounded, bound, "without budgets the attack should pin every reply")
}

// TestWriteTimeoutCutsOffNonReader: a peer that does not read its
// replies has its connection closed once a write has waited
// Limits.WriteTimeout, and what it held is released; a peer that reads
// keeps its connection for as long as it likes (each reply has a deadline
// of its own, however old the connection).
func TestWriteTimeoutCutsOffNonReader(t *testing.T) {
	const timeout = 500 * time.Millisecond
	srv, addr := startServer(t, kvs.Config{Limits: kvs.Limits{WriteTimeout: timeout}})
	cl, err := client.New(client.Config{Servers: []string{addr}, ConnsPerServer: 1})
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, cl.Put(ctx, "big", strings.Repeat("x", 1<<20)))
	before := srv.Conns()
	for start := time.Now(); time.Since(start) < 3*timeout; time.Sleep(timeout / 8) {
		_, err := cl.Do(ctx, []wire.Op{{Code: wire.OpGet, Key: "big"}})
		require.NoError(t, err)
	}
	require.Equal(t, before, srv.Conns(), "a reading peer's connection was closed or replaced")
	conn := pipelineBigReads(t, addr, "big", 4)
	defer conn.Close()
	require.Eventually(t, func() bool { return srv.Conns() == before }, 10*time.Second, 20*time.Millisecond,
		"the non-reading connection was not closed")
}

// openConns opens n connections to addr that each do what kind says and
// then fall silent.
func openConns(t *testing.T, addr, kind string, n int) []net.Conn {
	var conns []net.Conn
	for range n {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		var hello string
		switch kind {
		case "nothing":
		case "binary":
			hello = wire.Preamble
		case "raft":
			hello = "BKVRAFT1\x00\x00\x00\x00"
		case "connect":
			hello = "CONNECT /_goRPC_ HTTP/1.0\n\n"
		case "keep-alive":
			hello = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
		}
		if hello != "" {
			_, err = io.WriteString(c, hello)
			require.NoError(t, err)
		}
		conns = append(conns, c)
	}
	return conns
}

// countFDs returns how many file descriptors this process has open.
func countFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}

// TestIdleConnectionsAreReaped: 2,000 connections that fall silent after
// their first bytes (none at all, the binary preamble, the Raft preamble
// of a hosted shard, an HTTP CONNECT, an HTTP keep-alive request) are all
// closed by the server within its idle timeout, and its connection count
// and this process's file descriptors return to where they were.
func TestIdleConnectionsAreReaped(t *testing.T) {
	// Opening the 2,000 took over a second under go test ./... on 2
	// cores, and the first were reaped before the last were open.
	const idle = 3 * time.Second
	srv, addr := startServer(t, kvs.Config{RF: 1, DataDir: t.TempDir(), HandshakeTimeout: idle,
		Limits: kvs.Limits{IdleTimeout: idle, MaxConnsPerHost: 4096}})
	time.Sleep(200 * time.Millisecond)
	fds := countFDs(t)
	var conns []net.Conn
	for _, kind := range []string{"nothing", "binary", "raft", "connect", "keep-alive"} {
		conns = append(conns, openConns(t, addr, kind, 400)...)
	}
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	require.Eventually(t, func() bool { return srv.Conns() >= 1900 }, 5*time.Second, 10*time.Millisecond)
	start := time.Now()
	// Every connection must see the server close it: its reads end.
	var open atomic.Int64
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(idle + 5*time.Second))
			_, err := io.Copy(io.Discard, c)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				open.Add(1)
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	require.Zero(t, open.Load(), "connections still open after the idle timeout and 5 s")
	for _, c := range conns {
		_ = c.Close()
	}
	require.Eventually(t, func() bool { return srv.Conns() == 0 }, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return countFDs(t) <= fds+2 }, 5*time.Second, 10*time.Millisecond,
		"file descriptors: %d before, %d after", fds, countFDs(t))
	require.GreaterOrEqual(t, srv.Stats().IdleClosed.Load(), uint64(1000))
	t.Logf("2000 idle connections closed %v after they fell silent (idle timeout %v)", took, idle)
}

// TestConnectionCapPerHost: a host at its cap has further connections
// closed at once, and logged; another host is still served.
func TestConnectionCapPerHost(t *testing.T) {
	logs := &clustertest.LogBuffer{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv, err := kvs.New(kvs.Config{Logger: slog.New(slog.NewTextHandler(logs, nil)), Limits: kvs.Limits{MaxConnsPerHost: 10}})
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	addr := ln.Addr().String()
	held := openConns(t, addr, "binary", 10)
	defer func() {
		for _, c := range held {
			_ = c.Close()
		}
	}()
	require.Eventually(t, func() bool { return srv.Conns() == 10 }, 5*time.Second, 10*time.Millisecond)
	extra := openConns(t, addr, "nothing", 1)[0]
	defer extra.Close()
	_ = extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = extra.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the 11th connection from one host is closed at once")
	require.Equal(t, 1, logs.Count("refusing connection"))

	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	other, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	defer other.Close()
	_, err = io.WriteString(other, "GET /nothing HTTP/1.0\r\n\r\n")
	require.NoError(t, err)
	line, err := bufio.NewReader(other).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, "HTTP/1.0 404", "another host is served")
}

// gobFlood sends net/rpc's HTTP handshake and then a gob message of size
// bytes (its length, then zeros), as fast as the server reads it, and
// returns the connection.
func gobFlood(t *testing.T, addr string, size uint32) net.Conn {
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	_, err = io.WriteString(c, "CONNECT /_goRPC_ HTTP/1.0\n\n")
	require.NoError(t, err)
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, "200 Connected to Go RPC")
	go func() {
		// gob's unsigned length: 0xFC says 4 big-endian bytes follow.
		if _, err := c.Write(append([]byte{0xFC}, binary.BigEndian.AppendUint32(nil, size)...)); err != nil {
			return
		}
		chunk := make([]byte, 1<<20)
		for sent := uint32(0); sent < size; sent += uint32(len(chunk)) {
			if _, err := c.Write(chunk); err != nil {
				return // the server closed the connection
			}
		}
	}()
	return c
}

// TestOversizeGobRefusedBeforeAllocation: a gob message of 256 MiB on the
// HTTP net/rpc path is refused from its length: the connection is closed
// at once, and the heap does not grow. With the cap raised above it, gob
// reads the whole message into memory before decoding it, which is how a
// 512 MiB Put cost 2 GB.
func TestOversizeGobRefusedBeforeAllocation(t *testing.T) {
	const size = 256 << 20
	_, addr := startServer(t, kvs.Config{})
	base := heapNow()
	c := gobFlood(t, addr, size)
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, c)
	// The server closes the connection at once: EOF, or a reset when it
	// closed with our bytes unread; not the read deadline.
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the connection was not closed: %v", err)
	require.Less(t, heapNow(), base+(32<<20))

	if testing.Short() {
		return
	}
	_, addr = startServer(t, kvs.Config{Limits: kvs.Limits{MaxGobMessage: 1 << 30}})
	base = heapNow()
	c = gobFlood(t, addr, size)
	defer c.Close()
	require.Eventually(t, func() bool { return heapNow() > base+(200<<20) }, 10*time.Second, 20*time.Millisecond,
		"with the cap above the message, the server holds it whole")
}

// TestDigestOnlyForNodes: without TLS, content digests (a full scan of
// every shard) are granted at most once per Limits.DigestEvery.
func TestDigestRateLimitedWithoutTLS(t *testing.T) {
	_, addr := startServer(t, kvs.Config{RF: 1, DataDir: t.TempDir(), Limits: kvs.Limits{DigestEvery: 300 * time.Millisecond}})
	digest := func() error {
		_, err := client.Status(addr, wire.StatusRequest{Digest: true}, 2*time.Second)
		return err
	}
	require.Eventually(t, func() bool { return digest() == nil }, 10*time.Second, 20*time.Millisecond)
	require.ErrorContains(t, digest(), "content digests", "a second digest at once is refused")
	_, err := client.Status(addr, wire.StatusRequest{}, 2*time.Second)
	require.NoError(t, err, "status without a digest is not limited")
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, digest())
}

// TestDigestOnlyForNodeCertificates: with TLS, a client certificate gets
// status but not content digests; a node certificate gets both.
func TestDigestOnlyForNodeCertificates(t *testing.T) {
	dir := certDir(t)
	_, addr := startServer(t, kvs.Config{RF: 1, DataDir: t.TempDir(), Identity: loadID(t, dir, "s1")})
	asClient := client.Admin{TLS: loadID(t, dir, "client").ClientConfig()}
	asNode := client.Admin{TLS: loadID(t, dir, "s2").ClientConfig()}
	require.Eventually(t, func() bool {
		_, err := asNode.Status(addr, wire.StatusRequest{Digest: true}, 2*time.Second)
		return err == nil
	}, 10*time.Second, 20*time.Millisecond)
	_, err := asClient.Status(addr, wire.StatusRequest{}, 2*time.Second)
	require.NoError(t, err)
	_, err = asClient.Status(addr, wire.StatusRequest{Digest: true}, 2*time.Second)
	require.ErrorContains(t, err, `role "client"`)
}

// TestAcceptSurvivesEMFILE: a server process limited to 64 file
// descriptors is sent 300 connections at once. Accept fails with EMFILE
// while they are open; the server retries with backoff instead of
// exiting, closes the silent ones after its handshake timeout, and then
// serves a client.
func TestAcceptSurvivesEMFILE(t *testing.T) {
	if os.Getenv("BATCHKV_HELPER") == "emfile" {
		helperServer()
		return
	}
	cmd := helperCommand(t, "ulimit -n 64 && exec \"$0\" -test.run='^TestAcceptSurvivesEMFILE$'")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr clustertest.LogBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	addr = strings.TrimSpace(addr)

	storm := openConns(t, addr, "nothing", 300)
	require.Eventually(t, func() bool { return stderr.Count("accept failed; retrying") > 0 }, 10*time.Second, 20*time.Millisecond,
		"the storm should exhaust the server's descriptors")
	for _, c := range storm {
		_ = c.Close()
	}
	cl, err := client.New(client.Config{Servers: []string{addr}})
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, cl.Put(ctx, "k", "v"), "the server serves after the storm")
	v, err := cl.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "v", v)
	require.Nil(t, cmd.ProcessState, "the server process is still running")
}

// helperCommand runs this test binary again under sh with script, as a
// helper process (BATCHKV_HELPER=emfile).
func helperCommand(t *testing.T, script string) *exec.Cmd {
	cmd := exec.Command("sh", "-c", script, os.Args[0])
	cmd.Env = append(os.Environ(), "BATCHKV_HELPER=emfile")
	return cmd
}

// helperServer is the server process of TestAcceptSurvivesEMFILE: it
// prints its address and serves until its parent kills it or 60 s pass.
func helperServer() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	srv, err := kvs.New(kvs.Config{HandshakeTimeout: 500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println(ln.Addr().String())
	go func() { time.Sleep(60 * time.Second); os.Exit(3) }()
	_ = srv.Serve(ln)
}

// TestReaperSparesRaftConnectionsThatCarriedAnRPC: a Raft connection that
// never carried an RPC is reaped like any other, but one that has is not,
// however long it idles: hashicorp/raft keeps pooled connections to its
// peers and does not retry an RPC on one it finds closed.
func TestReaperSparesRaftConnectionsThatCarriedAnRPC(t *testing.T) {
	const idle = 500 * time.Millisecond
	srv, addr := startServer(t, kvs.Config{RF: 1, DataDir: t.TempDir(), HandshakeTimeout: idle,
		Limits: kvs.Limits{IdleTimeout: idle}})
	silent := openConns(t, addr, "raft", 1)[0]
	defer silent.Close()
	used := openConns(t, addr, "raft", 1)[0]
	defer used.Close()
	_, err := used.Write([]byte{0}) // the first byte of an RPC: its type
	require.NoError(t, err)
	_ = silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.Copy(io.Discard, silent)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the silent Raft connection was not reaped")
	_ = used.SetReadDeadline(time.Now().Add(4 * idle))
	_, err = used.Read(make([]byte, 1))
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "the Raft connection that carried an RPC was reaped: %v", err)
	require.Equal(t, 1, srv.Conns())
}

// TestDuplicateSequenceNumbersReleaseTheirCharges: a client may reuse a
// sequence number for requests in flight at once. Each still gets its
// reply, and once they are written the server holds no reply bytes: calls
// are tracked by the server's own numbers, not the client's.
func TestDuplicateSequenceNumbersReleaseTheirCharges(t *testing.T) {
	srv, addr := startServer(t, kvs.Config{})
	cl, err := client.New(client.Config{Servers: []string{addr}})
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, cl.Put(ctx, "k", strings.Repeat("v", 1000)))
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	ops := []wire.Op{{Code: wire.OpGet, Key: "k"}}
	out := []byte(wire.Preamble)
	for range 20 {
		out = append(out, binaryFrame(5, &wire.BatchArgs{Ops: ops})...)
	}
	_, err = conn.Write(out)
	require.NoError(t, err)
	r := bufio.NewReader(conn)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i := range 20 {
		var hdr [4 + 8]byte
		_, err := io.ReadFull(r, hdr[:])
		require.NoError(t, err, "reply %d", i)
		require.EqualValues(t, 5, binary.LittleEndian.Uint64(hdr[4:]), "the client's sequence number comes back")
		_, err = io.CopyN(io.Discard, r, int64(binary.LittleEndian.Uint32(hdr[:4])-8))
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return kvs.ReplyBytesHeld(srv) == 0 }, 5*time.Second, 10*time.Millisecond,
		"reply bytes still charged: %d", kvs.ReplyBytesHeld(srv))
}

// TestServedCallsAreForgotten: every request's call is let go once it is
// answered, whichever path served it: a batch on the binary port and on
// net/rpc's gob codec (served without net/rpc's reflection), a malformed
// batch, and the skeleton's Get and Put (served by net/rpc) after a batch
// on the same connection.
func TestServedCallsAreForgotten(t *testing.T) {
	srv, addr := startServer(t, kvs.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, codec := range []string{"binary", "gob"} {
		cl, err := client.New(client.Config{Servers: []string{addr}, Codec: codec})
		require.NoError(t, err)
		for i := range 20 {
			require.NoError(t, cl.Put(ctx, fmt.Sprint(codec, i), "v"))
			_, err := cl.Do(ctx, []wire.Op{{Code: wire.OpGet, Key: fmt.Sprint(codec, i)}})
			require.NoError(t, err)
		}
		cl.Close()
	}
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	frame := append(binaryFrame(1, &wire.BatchArgs{Ops: []wire.Op{{Code: wire.OpGet, Key: "k"}}}), 0xff)
	binary.LittleEndian.PutUint32(frame, binary.LittleEndian.Uint32(frame)+1) // a byte after the last op
	_, err = conn.Write(append([]byte(wire.Preamble), frame...))
	require.NoError(t, err)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var hdr [16]byte // length, sequence number, error length
	_, err = io.ReadFull(conn, hdr[:])
	require.NoError(t, err, "the malformed batch was answered")
	errText := make([]byte, binary.LittleEndian.Uint32(hdr[12:]))
	_, err = io.ReadFull(conn, errText)
	require.NoError(t, err)
	require.Contains(t, string(errText), "malformed", "the reply is the decoding error")
	rc, err := rpc.DialHTTP("tcp", addr)
	require.NoError(t, err)
	defer rc.Close()
	var batch wire.BatchReply // a BatchOp, then methods net/rpc serves, on one connection
	require.NoError(t, rc.Call("KVService.BatchOp", &wire.BatchArgs{Ops: []wire.Op{{Code: wire.OpPut, Key: "s", Value: "w"}}}, &batch))
	require.Equal(t, wire.StatusOK, batch.Status)
	require.NoError(t, rc.Call("KVService.Put", &skeletonPutRequest{Key: "s", Value: "v"}, &skeletonPutResponse{}))
	var got skeletonGetResponse
	require.NoError(t, rc.Call("KVService.Get", &skeletonGetRequest{Key: "s"}, &got))
	require.Equal(t, "v", got.Value)
	require.Equal(t, 0, kvs.CallsTracked(srv), "calls still tracked after every request was answered")
	require.Eventually(t, func() bool { return kvs.ReplyBytesHeld(srv) == 0 }, 5*time.Second, 10*time.Millisecond,
		"reply bytes still charged: %d", kvs.ReplyBytesHeld(srv))
}

// stalledPeers starts a server whose reply budget is 16 MiB (4 MiB a
// connection) with the given stall timeout, stores "small" = "v" and a
// 1 MiB value "big" through a client, and opens 8 connections that each
// pipeline the given number of batches of 62 gets of big (of which a
// batch reads 8, half the budget) and never read, until the server is
// over its budget. It returns the server, the client, and a function
// that closes the 8 connections.
func stalledPeers(t *testing.T, stall time.Duration, batches int) (*kvs.Server, *client.Client, func()) {
	srv, addr := startServer(t, kvs.Config{Limits: kvs.Limits{ReplyBudget: 16 << 20, ConnReplyBudget: 4 << 20,
		StallTimeout: stall, WriteTimeout: time.Minute}})
	cl, err := client.New(client.Config{Servers: []string{addr}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, cl.Put(ctx, "big", strings.Repeat("x", wire.MaxValueBytes)))
	require.NoError(t, cl.Put(ctx, "small", "v"))
	var conns []net.Conn
	for range 8 {
		conns = append(conns, pipelineBigReads(t, addr, "big", batches))
	}
	closeAll := func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}
	require.Eventually(t, func() bool { return gauge(t, srv, "batchkv_reply_held_bytes") >= 16<<20 }, 10*time.Second, 5*time.Millisecond,
		"the attack never took the server over its reply budget")
	return srv, cl, closeAll
}

// stalledAttack runs stalledPeers with 2 batches a connection and returns
// how long another client then took to be served 20 gets (or the error
// that ended them, 5 s at the most) and how many connections the server
// closed as stalled.
func stalledAttack(t *testing.T, stall time.Duration) (time.Duration, uint64, error) {
	srv, cl, closePeers := stalledPeers(t, stall, 2)
	defer closePeers()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	served, cancelServed := context.WithTimeout(ctx, 5*time.Second)
	defer cancelServed()
	for range 20 {
		v, err := cl.Get(served, "small")
		if err != nil {
			return time.Since(start), srv.Stats().StalledClosed.Load(), err
		}
		require.Equal(t, "v", v)
	}
	return time.Since(start), srv.Stats().StalledClosed.Load(), nil
}

// TestStalledReadersDoNotStarveOthers: peers that each hold one 8 MiB
// reply unread (one always proceeds per connection) take the server over
// its reply budget, where every other batch with gets waits; the server
// closes them once they have written nothing for Limits.StallTimeout, so
// another client's 20 gets are served within 5 s. With the stall timeout
// as long as the write timeout, the same client is not served within
// those 5 s (the check that cutting stalled peers is what serves it).
func TestStalledReadersDoNotStarveOthers(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates about 1 GiB")
	}
	took, closed, err := stalledAttack(t, 200*time.Millisecond)
	t.Logf("with a 200 ms stall timeout: another client's 20 gets took %v (%v), %d connections closed as stalled", took, err, closed)
	require.NoError(t, err)
	require.Positive(t, closed)

	took, closed, err = stalledAttack(t, time.Minute)
	t.Logf("with a 1 min stall timeout: %v (%v), %d closed", took, err, closed)
	require.Error(t, err, "the client was served while the attackers held the budget")
	require.Zero(t, closed)
}

// TestStalledReaderClosedSoonAfterBudgetGoesOver: with the reaper's
// looks an hour apart while the server is within its reply budget (30 s
// here: a quarter of the idle timeout), a peer that holds two 4 MiB
// replies unread (one batch reads at most half the budget) takes the
// server over its 8 MiB budget and is still closed within seconds of the
// 100 ms stall timeout: the budget going over wakes the reaper, which
// then looks at the stall timeout's pace.
func TestStalledReaderClosedSoonAfterBudgetGoesOver(t *testing.T) {
	cfg := kvs.Config{Limits: kvs.Limits{ReplyBudget: 8 << 20, ConnReplyBudget: 8 << 20,
		StallTimeout: 100 * time.Millisecond, WriteTimeout: time.Minute}}
	kvs.SetReapEveryMaxForTest(&cfg, time.Hour)
	srv, addr := startServer(t, cfg)
	cl, err := client.New(client.Config{Servers: []string{addr}})
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, cl.Put(t.Context(), "big", strings.Repeat("x", wire.MaxValueBytes)))
	conn := pipelineBigReads(t, addr, "big", 2)
	defer conn.Close()
	require.Eventually(t, func() bool { return gauge(t, srv, "batchkv_reply_held_bytes") >= 8<<20 }, 10*time.Second, 5*time.Millisecond,
		"the replies never took the server over its budget")
	start := time.Now()
	require.Eventually(t, func() bool { return srv.Stats().StalledClosed.Load() > 0 }, 5*time.Second, 5*time.Millisecond,
		"the stalled peer was not closed: the reaper was not woken when the budget went over")
	t.Logf("closed %v after the budget was seen over", time.Since(start))
}
