package kvs_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/auth"
	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/wire"
)

// redisClient returns a go-redis client of addr speaking RESP proto, with
// one connection, so that a test can tell whether an error closed it.
func redisClient(t *testing.T, addr string, proto int, tlsCfg *tls.Config) *redis.Client {
	t.Helper()
	rc := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto, PoolSize: 1, MaxRetries: -1,
		DialTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, TLSConfig: tlsCfg})
	t.Cleanup(func() { _ = rc.Close() })
	return rc
}

// checkCommands runs every command a Redis client may send through rc,
// with keys named after prefix.
func checkCommands(t *testing.T, rc *redis.Client, prefix string) {
	ctx := t.Context()
	k := func(i int) string { return fmt.Sprintf("%s-%d", prefix, i) }
	require.Equal(t, "PONG", rc.Ping(ctx).Val())
	require.Equal(t, "hi\r\nthere", rc.Echo(ctx, "hi\r\nthere").Val())
	require.NoError(t, rc.Set(ctx, k(0), "v0", 0).Err())
	require.Equal(t, "v0", rc.Get(ctx, k(0)).Val())
	require.ErrorIs(t, rc.Get(ctx, k(99)).Err(), redis.Nil)
	// Binary keys and values, and an empty value.
	bin := prefix + "\x00\r\n\xff"
	require.NoError(t, rc.Set(ctx, bin, "\r\n\x00", 0).Err())
	require.Equal(t, "\r\n\x00", rc.Get(ctx, bin).Val())
	require.NoError(t, rc.Set(ctx, k(1), "", 0).Err())
	v, err := rc.Get(ctx, k(1)).Result()
	require.NoError(t, err)
	require.Equal(t, "", v)

	require.NoError(t, rc.MSet(ctx, k(2), "v2", k(3), "v3", k(4), "v4").Err())
	require.Equal(t, []any{"v2", nil, "v4", "v0"}, rc.MGet(ctx, k(2), k(98), k(4), k(0)).Val())
	require.Equal(t, int64(3), rc.Exists(ctx, k(2), k(3), k(97), k(3)).Val())
	require.Equal(t, int64(2), rc.Del(ctx, k(2), k(3), k(96)).Val())
	require.Equal(t, int64(0), rc.Exists(ctx, k(2), k(3)).Val())
	require.Equal(t, int64(1), rc.Unlink(ctx, k(4)).Val())

	require.NoError(t, rc.Do(ctx, "SELECT", "0").Err())
	require.ErrorContains(t, rc.Do(ctx, "SELECT", "1").Err(), "out of range")
	n, err := rc.DBSize(ctx).Result()
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, int64(0))
	info, err := rc.Info(ctx).Result()
	require.NoError(t, err)
	require.Contains(t, info, "redis_version:")
	require.NoError(t, rc.Do(ctx, "CLIENT", "SETNAME", "tester").Err())
	require.Equal(t, "tester", rc.ClientGetName(ctx).Val())
	id, err := rc.ClientID(ctx).Result()
	require.NoError(t, err)
	require.Positive(t, id)
	require.NoError(t, rc.Do(ctx, "CLIENT", "SETINFO", "LIB-NAME", "x").Err())
	cfg, err := rc.ConfigGet(ctx, "save").Result()
	require.NoError(t, err)
	require.Equal(t, map[string]string{"save": ""}, cfg)
	cfg, err = rc.ConfigGet(ctx, "*").Result()
	require.NoError(t, err)
	require.Equal(t, "no", cfg["appendonly"])
	cmds, err := rc.Command(ctx).Result()
	require.NoError(t, err)
	require.Equal(t, int8(2), cmds["get"].Arity)
	require.Equal(t, int8(1), cmds["get"].FirstKeyPos)

	// Unknown commands and refused options leave the connection usable.
	require.ErrorContains(t, rc.Do(ctx, "FLUSHALL").Err(), "unknown command 'FLUSHALL'")
	require.ErrorContains(t, rc.Do(ctx, "SET", k(5), "v", "NX", "XX").Err(), "syntax error")
	require.ErrorContains(t, rc.Do(ctx, "SET", k(5), "v", "IFEQ").Err(), "syntax error")
	require.ErrorContains(t, rc.Set(ctx, k(5), "v", time.Minute).Err(), "EX is not supported")
	require.ErrorContains(t, rc.Do(ctx, "SET", k(5), "v", "KEEPTTL").Err(), "KEEPTTL is not supported")
	require.ErrorContains(t, rc.Do(ctx, "SET", k(5), "v", "BOGUS").Err(), "syntax error")
	require.ErrorContains(t, rc.Do(ctx, "GET").Err(), "wrong number of arguments")
	require.ErrorContains(t, rc.Do(ctx, "MSET", k(5), "v", k(6)).Err(), "wrong number of arguments")
	require.ErrorContains(t, rc.Do(ctx, "CONFIG", "SET", "save", "").Err(), "not supported")
	require.ErrorContains(t, rc.Get(ctx, "").Err(), "empty keys")
	require.ErrorIs(t, rc.Get(ctx, k(5)).Err(), redis.Nil, "a refused SET wrote")
	// 4 KiB+1 keys: refused, nothing written, connection kept.
	long := strings.Repeat("k", wire.MaxKeyBytes+1)
	require.ErrorContains(t, rc.Set(ctx, long, "v", 0).Err(), "key of 4097 bytes over the limit of 4096")
	require.ErrorContains(t, rc.MSet(ctx, k(7), "v", long, "v").Err(), "over the limit")
	require.ErrorIs(t, rc.Get(ctx, k(7)).Err(), redis.Nil, "a refused MSET wrote part of itself")
	require.Equal(t, "v0", rc.Get(ctx, k(0)).Val())

	// A pipeline: replies in order, each command its own.
	pipe := rc.Pipeline()
	sets := make([]*redis.StatusCmd, 100)
	gets := make([]*redis.StringCmd, 100)
	for i := range 100 {
		sets[i] = pipe.Set(ctx, k(1000+i), fmt.Sprint("p", i), 0)
		gets[i] = pipe.Get(ctx, k(1000+i))
	}
	bad := pipe.Do(ctx, "NOSUCH")
	ping := pipe.Ping(ctx)
	_, err = pipe.Exec(ctx)
	require.Error(t, err) // NOSUCH's
	for i := range 100 {
		require.NoError(t, sets[i].Err())
		require.Equal(t, fmt.Sprint("p", i), gets[i].Val())
	}
	require.ErrorContains(t, bad.Err(), "unknown command")
	require.Equal(t, "PONG", ping.Val())
}

// TestRESPCommands runs every command through go-redis, over RESP2 and
// RESP3, against one server, two servers that forward to each other
// (RF=1 ring), and three replicated servers (RF=3).
func TestRESPCommands(t *testing.T) {
	one := newTestCluster(t, 1, clusterOptions{})
	ring := newTestCluster(t, 2, clusterOptions{})
	rf3 := newReplCluster(t, 3, 3, 3)
	for sh := range 3 {
		rf3.WaitLeader(sh, -1)
	}
	for _, tc := range []struct {
		name string
		addr string
	}{{"one server", one.addrs[0]}, {"ring", ring.addrs[0]}, {"rf3", rf3.Addrs()[1]}} {
		for _, proto := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/RESP%d", tc.name, proto), func(t *testing.T) {
				rc := redisClient(t, tc.addr, proto, nil)
				prefix := fmt.Sprintf("%s%d", tc.name, proto)
				checkCommands(t, rc, prefix)
				checkConditional(t, rc, prefix)
			})
		}
	}
	// The ring forwarded what server 1 owns; both servers hold keys.
	require.Positive(t, ring.servers[0].Stats().Forwarded.Load())
	require.Positive(t, ring.servers[1].Store().Len())
}

// TestRESPPipelineIsOneBatch: a pipeline of 500 commands that arrives in
// one read becomes one batch, and MGET of 300 keys is one batch.
func TestRESPPipelineIsOneBatch(t *testing.T) {
	c := newTestCluster(t, 1, clusterOptions{})
	rc := redisClient(t, c.addrs[0], 2, nil)
	ctx := t.Context()
	require.NoError(t, rc.Ping(ctx).Err())
	stats := c.servers[0].Stats()
	before := stats.BatchCount()
	pipe := rc.Pipeline()
	for i := range 500 {
		pipe.Set(ctx, fmt.Sprint("k", i), "v", 0)
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	// One write of 500 commands is almost always one read; a few
	// batches at most if the kernel split it.
	require.LessOrEqual(t, stats.BatchCount()-before, uint64(3))
	keys := make([]string, 300)
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
	}
	before = stats.BatchCount()
	vals, err := rc.MGet(ctx, keys...).Result()
	require.NoError(t, err)
	require.Len(t, vals, 300)
	require.Equal(t, uint64(1), stats.BatchCount()-before)
}

// rawRESP sends bytes on a new connection to addr and returns what the
// server answers until it closes the connection (or within wait).
func rawRESP(t *testing.T, addr string, send string, wait time.Duration) (string, bool) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte(send))
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(wait)))
	got, err := io.ReadAll(bufio.NewReader(conn))
	closed := err == nil // EOF: the server closed it
	return string(got), closed
}

// TestRESPBadInput: frames that cannot be resynchronized get a clear
// error and a closed connection; a client on another connection goes on.
func TestRESPBadInput(t *testing.T) {
	c := newTestCluster(t, 1, clusterOptions{frameTimeout: 300 * time.Millisecond})
	good := redisClient(t, c.addrs[0], 3, nil)
	ctx := t.Context()
	cases := []struct {
		name, send, reply string
	}{
		{"negative array", "*-5\r\n", "invalid multibulk length"},
		{"2^40 elements", "*1099511627776\r\n", "over the limit"},
		{"2^40 bulk", "*2\r\n$3\r\nGET\r\n$1099511627776\r\n", "bulk length 1099511627776 over the limit of 1048576"},
		{"value of 1 MiB+1", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048577\r\n" + strings.Repeat("v", 1<<20+1) + "\r\n", "bulk length 1048577 over the limit"},
		{"not a bulk", "*1\r\n:5\r\n", "expected '$'"},
		{"binary inline", "GET \x00\x01\r\n", "control byte"},
		{"truncated array", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nab", ""},
		{"commands then garbage", "PING\r\n*1\r\n$4\r\nPING\r\n*x\r\n", "+PONG\r\n+PONG\r\n-ERR Protocol error: invalid multibulk length"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, closed := rawRESP(t, c.addrs[0], tc.send, 5*time.Second)
			require.True(t, closed, "connection left open; got %q", got)
			if tc.reply == "" {
				require.Empty(t, got)
			} else {
				require.Contains(t, got, tc.reply)
			}
			require.NoError(t, good.Set(ctx, "alive", tc.name, 0).Err())
			require.Equal(t, tc.name, good.Get(ctx, "alive").Val())
		})
	}
	_, err := c.servers[0].Store().AppendGet(nil, "k")
	require.False(t, err, "a refused SET wrote")
	// Through go-redis: a 1 MiB+1 value is refused with the reason; the
	// next command works (on a new connection), and a 1 MiB value works.
	// The server closes the connection after the refusal, as Redis does;
	// go-redis may hand that connection out again before it sees the
	// close, and its default retries are what carry the next command, so
	// this client keeps them (redisClient turns them off).
	rc := redis.NewClient(&redis.Options{Addr: c.addrs[0], Protocol: 2, PoolSize: 1, MaxRetries: 2,
		DialTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second})
	t.Cleanup(func() { _ = rc.Close() })
	require.ErrorContains(t, rc.Set(ctx, "big", strings.Repeat("v", wire.MaxValueBytes+1), 0).Err(), "over the limit of 1048576")
	require.NoError(t, rc.Set(ctx, "big", strings.Repeat("v", wire.MaxValueBytes), 0).Err())
	require.Len(t, rc.Get(ctx, "big").Val(), wire.MaxValueBytes)
	// Inline commands, as typed into telnet, and an empty line.
	got, _ := rawRESP(t, c.addrs[0], "PING\r\n\r\nset a b\nget a\r\nQUIT\r\nPING\r\n", 2*time.Second)
	require.Equal(t, "+PONG\r\n+OK\r\n$1\r\nb\r\n+OK\r\n", got)
}

// TestRESPOverTLS: with TLS, a Redis client with a client certificate
// is served on the same port, and one without a certificate is refused.
func TestRESPOverTLS(t *testing.T) {
	certs, err := auth.MakeLocal(filepath.Join(t.TempDir(), "certs"), []string{"127.0.0.1"})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv, err := kvs.New(kvs.Config{Identity: certs.Node, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	addr := ln.Addr().String()
	rc := redisClient(t, addr, 3, certs.Client.ClientConfig())
	require.NoError(t, rc.Set(t.Context(), "k", "v", 0).Err())
	require.Equal(t, "v", rc.Get(t.Context(), "k").Val())
	noCert := certs.Client.ClientConfig()
	noCert.Certificates = nil
	require.Error(t, redisClient(t, addr, 2, noCert).Ping(t.Context()).Err())
	require.Error(t, redisClient(t, addr, 2, nil).Ping(t.Context()).Err(), "plaintext served by a TLS server")
}

// TestRESPIdleConnectionsReaped: the idle reaper closes a RESP
// connection that does nothing.
func TestRESPIdleConnectionsReaped(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv, err := kvs.New(kvs.Config{Limits: kvs.Limits{IdleTimeout: 200 * time.Millisecond},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	got, closed := rawRESP(t, ln.Addr().String(), "PING\r\n", 5*time.Second)
	require.True(t, closed)
	require.Equal(t, "+PONG\r\n", got)
	require.Equal(t, uint64(1), srv.Stats().IdleClosed.Load())
}

// checkConditional runs the conditional writes through rc: SET NX, XX,
// GET and IFEQ, SETNX and GETSET, each when its condition holds and when
// it does not.
func checkConditional(t *testing.T, rc *redis.Client, prefix string) {
	ctx := t.Context()
	k := prefix + "-cond"
	ok, err := rc.SetNX(ctx, k, "a", 0).Result()
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = rc.SetNX(ctx, k, "b", 0).Result()
	require.NoError(t, err)
	require.False(t, ok)
	require.Equal(t, "a", rc.Get(ctx, k).Val())
	require.ErrorIs(t, rc.Do(ctx, "SET", k, "b", "NX").Err(), redis.Nil)
	require.NoError(t, rc.Do(ctx, "SET", k, "b", "XX").Err())
	require.ErrorIs(t, rc.Do(ctx, "SET", k+"x", "b", "XX").Err(), redis.Nil)
	require.ErrorIs(t, rc.Get(ctx, k+"x").Err(), redis.Nil, "SET XX wrote a missing key")
	require.Equal(t, "b", rc.Do(ctx, "SET", k, "c", "GET").Val())
	require.ErrorIs(t, rc.Do(ctx, "SET", k+"y", "c", "GET").Err(), redis.Nil)
	require.Equal(t, "c", rc.Get(ctx, k+"y").Val())
	require.Equal(t, "c", rc.Do(ctx, "GETSET", k, "d").Val())
	require.Equal(t, "d", rc.Do(ctx, "SET", k, "e", "NX", "GET").Val())
	require.Equal(t, "d", rc.Get(ctx, k).Val(), "SET NX GET wrote a present key")
	require.ErrorIs(t, rc.Do(ctx, "SET", k, "e", "IFEQ", "x").Err(), redis.Nil)
	require.NoError(t, rc.Do(ctx, "SET", k, "e", "IFEQ", "d").Err())
	require.Equal(t, "e", rc.Get(ctx, k).Val())
}

// casCounter has n goroutines each add one to a counter through rc with
// GET and then write, which returns redis.Nil when its condition did not
// hold (the goroutine then reads and tries again). All first GETs happen
// before any write, so a write that ignores its condition loses updates
// every time. It returns the counter's final value.
func casCounter(t *testing.T, rc *redis.Client, n int, write func(ctx context.Context, cur int) error) string {
	ctx := t.Context()
	require.NoError(t, rc.Set(ctx, "counter", "0", 0).Err())
	var wg, read sync.WaitGroup
	var mismatches atomic.Int64
	read.Add(n)
	for range n {
		wg.Go(func() {
			for first := true; ; first = false {
				cur, err := rc.Get(ctx, "counter").Int()
				if first {
					read.Done()
					read.Wait()
				}
				if !assert.NoError(t, err) {
					return
				}
				err = write(ctx, cur)
				if err == nil {
					return
				}
				if !assert.ErrorIs(t, err, redis.Nil) {
					return
				}
				mismatches.Add(1)
			}
		})
	}
	wg.Wait()
	t.Logf("%d increments, %d mismatches retried", n, mismatches.Load())
	return rc.Get(ctx, "counter").Val()
}

// TestRESPCompareAndSetUnderContention: 32 goroutines each add one to a
// counter with GET and SET ... IFEQ, on one server, a ring and RF=3; it
// ends at exactly 32. The same run
// with a plain SET, the planted bug of a server that ignores IFEQ, ends
// at 1.
func TestRESPCompareAndSetUnderContention(t *testing.T) {
	one := newTestCluster(t, 1, clusterOptions{})
	ring := newTestCluster(t, 2, clusterOptions{})
	rf3 := newReplCluster(t, 3, 3, 3)
	for sh := range 3 {
		rf3.WaitLeader(sh, -1)
	}
	const n = 32
	for _, tc := range []struct {
		name string
		addr string
	}{{"one server", one.addrs[0]}, {"ring", ring.addrs[0]}, {"rf3", rf3.Addrs()[2]}} {
		t.Run(tc.name, func(t *testing.T) {
			rc := redis.NewClient(&redis.Options{Addr: tc.addr, PoolSize: n})
			t.Cleanup(func() { _ = rc.Close() })
			got := casCounter(t, rc, n, func(ctx context.Context, cur int) error {
				return rc.Do(ctx, "SET", "counter", cur+1, "IFEQ", cur).Err()
			})
			require.Equal(t, fmt.Sprint(n), got)
			planted := casCounter(t, rc, n, func(ctx context.Context, cur int) error {
				return rc.Do(ctx, "SET", "counter", cur+1).Err()
			})
			require.Equal(t, "1", planted, "the check cannot tell a CAS from a blind write")
		})
	}
}
