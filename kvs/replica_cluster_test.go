package kvs_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/auth"
	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/faultnet"
	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/kvs/replica"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// replCluster is n replicated servers on loopback TCP with data dirs under
// the test's temp dir. Raft traffic from server i to server j goes through
// a toxiproxy proxy of its own (package faultnet), so tests can cut, slow
// or mute any server's links; clients talk to the servers directly.
type replCluster struct {
	t      *testing.T
	addrs  []string
	dirs   []string
	shards int
	rf     int
	// initial is how many of addrs start as the cluster's members (0:
	// all); the others start with Join, as spares to add.
	initial int
	// inMemory starts every server with Config.InMemory and no data dir.
	inMemory bool
	links    *faultnet.Links
	mu       sync.Mutex
	servers  []*kvs.Server // nil while stopped
	stale    bool          // plant the stale-read bug in every server
	// serveByMap plants kvs.SetServeByMapForTest in every server.
	serveByMap bool
	// casOnLeader plants kvs.SetCASOnLeaderForTest in every server.
	casOnLeader bool
	timing      replica.Timing
	// readMode is every server's Config.ReadMode; plantLease, when set,
	// plants a lease of that length, unchecked (kvs.PlantLeaseForTest).
	readMode   string
	plantLease time.Duration
	logger     *slog.Logger
	// prepareDir, when set, readies server i's data dir before it first
	// starts (a test mounts a small file system on it).
	prepareDir func(i int, dir string)
	// With withTLS: every server's identity, the clients', and the one
	// that may change membership.
	nodeID, clientID, adminID *auth.Identity
}

// withTLS makes every connection of the cluster mutual TLS: the servers
// share one node certificate for 127.0.0.1, and clients have a client
// certificate of the same CA.
func withTLS(c *replCluster) {
	var err error
	certs, err := auth.MakeLocal(filepath.Join(c.t.TempDir(), "certs"), []string{"127.0.0.1"})
	require.NoError(c.t, err)
	c.nodeID, c.clientID, c.adminID = certs.Node, certs.Client, certs.Admin
}

// admin reaches the servers' admin RPCs, over TLS when the cluster has it.
func (c *replCluster) admin() client.Admin {
	if c.clientID == nil {
		return client.Admin{}
	}
	return client.Admin{TLS: c.clientID.ClientConfig()}
}

func newReplCluster(t *testing.T, n, rf, shards int, opts ...func(*replCluster)) *replCluster {
	t.Helper()
	c := &replCluster{t: t, rf: rf, shards: shards, servers: make([]*kvs.Server, n)}
	for _, o := range opts {
		o(c)
	}
	// The servers' ports stay taken until the proxies have theirs, or a
	// proxy could be given a server's port.
	var held []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		held = append(held, ln)
		c.addrs = append(c.addrs, ln.Addr().String())
		c.dirs = append(c.dirs, t.TempDir())
		if c.prepareDir != nil {
			c.prepareDir(len(c.dirs)-1, c.dirs[len(c.dirs)-1])
		}
	}
	c.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		c.logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	links, err := faultnet.NewLinks(c.addrs)
	require.NoError(t, err)
	c.links = links
	for _, ln := range held {
		require.NoError(t, ln.Close())
	}
	t.Cleanup(func() {
		for i := range c.servers {
			c.stop(i)
		}
		c.links.Close()
	})
	for i := range n {
		if c.initial == 0 || i < c.initial {
			c.start(i) // spares are started by the test
		}
	}
	return c
}

// start (re)starts server i on its address and data dir.
func (c *replCluster) start(i int) {
	c.t.Helper()
	cfg := kvs.Config{Self: c.addrs[i], Peers: c.addrs, Replicas: c.rf, Shards: c.shards, DataDir: c.dirs[i],
		InMemory: c.inMemory, Logger: c.logger.With("server", i), DialRaft: c.links.Dialer(i, c.addrs), Raft: c.timing, Identity: c.nodeID,
		ReadMode: c.readMode}
	if c.initial > 0 {
		cfg.Peers = c.addrs[:c.initial]
		if i >= c.initial {
			cfg.Peers, cfg.Join = nil, c.addrs[0]
		}
	}
	if c.inMemory {
		cfg.DataDir = ""
	}
	if c.plantLease > 0 {
		kvs.PlantLeaseForTest(&cfg, c.plantLease)
	}
	srv, err := kvs.New(cfg)
	require.NoError(c.t, err)
	var ln net.Listener
	require.Eventually(c.t, func() bool {
		ln, err = net.Listen("tcp", c.addrs[i])
		return err == nil
	}, 5*time.Second, 20*time.Millisecond, "listen on %s: %v", c.addrs[i], err)
	kvs.SetStaleReadsForTest(srv, c.stale)
	kvs.SetServeByMapForTest(srv, c.serveByMap)
	kvs.SetCASOnLeaderForTest(srv, c.casOnLeader)
	go func() { _ = srv.Serve(ln) }()
	c.mu.Lock()
	c.servers[i] = srv
	c.mu.Unlock()
}

// stop closes server i, if running: its connections drop at once, as
// when its process dies.
func (c *replCluster) stop(i int) {
	c.mu.Lock()
	srv := c.servers[i]
	c.servers[i] = nil
	c.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// isolate cuts (on) or restores (off) every Raft link to and from server i.
func (c *replCluster) isolate(i int, on bool) {
	c.t.Helper()
	require.NoError(c.t, c.links.Isolate(i, on))
}

func (c *replCluster) client(t *testing.T, tweak ...func(*client.Config)) *client.Client {
	servers := c.addrs
	if c.initial > 0 {
		servers = c.addrs[:c.initial]
	}
	cfg := client.Config{Servers: servers, Shards: c.shards, Replicas: c.rf, MaxBatchOps: 64, TLS: c.admin().TLS}
	for _, f := range tweak {
		f(&cfg)
	}
	cl, err := client.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// status asks server i for its view of its shards.
func (c *replCluster) status(i int) (wire.StatusReply, error) {
	return c.admin().Status(c.addrs[i], wire.StatusRequest{}, time.Second)
}

// leader returns the server that leads shard according to server i's
// own state, or -1.
func (c *replCluster) leader(shard int) int {
	for i := range c.addrs {
		c.mu.Lock()
		up := c.servers[i] != nil
		c.mu.Unlock()
		if !up {
			continue
		}
		st, err := c.status(i)
		if err != nil {
			continue
		}
		for _, s := range st.Shards {
			if s.Shard == shard && s.State == "Leader" {
				return i
			}
		}
	}
	return -1
}

// waitLeader waits until some server other than not leads shard.
func (c *replCluster) waitLeader(shard int, not int) int {
	c.t.Helper()
	l := -1
	require.Eventually(c.t, func() bool {
		l = c.leader(shard)
		return l >= 0 && l != not
	}, 15*time.Second, 50*time.Millisecond, "no leader for shard %d", shard)
	return l
}

// waitPreferredLeader waits until the preferred replica of shard under
// layout leads it, and returns its index. A new shard's first leader need
// not be the preferred replica, which then takes leadership back: a test
// that writes through one leader from its start begins here, or its
// first ops can meet that hand-over.
func (c *replCluster) waitPreferredLeader(layout *shard.Layout, sh int) int {
	c.t.Helper()
	x := layout.Preferred(sh)
	require.Eventually(c.t, func() bool { return c.leader(sh) == x }, 15*time.Second, 50*time.Millisecond,
		"shard %d's preferred replica never led", sh)
	return x
}

// inBatches calls f with ops on keys prefix0..prefix{n-1}, 500 at a time,
// made by op, and the index of the first.
func inBatches(prefix string, n int, op func(key string, i int) wire.Op, f func(start int, ops []wire.Op)) {
	for start := 0; start < n; start += 500 {
		ops := make([]wire.Op, 0, 500)
		for i := start; i < min(n, start+500); i++ {
			ops = append(ops, op(fmt.Sprintf("%s%d", prefix, i), i))
		}
		f(start, ops)
	}
}

// putAll writes n keys prefix0..prefix{n-1} in batches and fails the test
// on any error.
func putAll(t *testing.T, cl *client.Client, prefix string, n int, value func(i int) string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	put := func(key string, i int) wire.Op { return wire.Op{Code: wire.OpPut, Key: key, Value: value(i)} }
	inBatches(prefix, n, put, func(_ int, ops []wire.Op) {
		res, err := cl.Do(ctx, ops)
		require.NoError(t, err)
		for _, r := range res {
			require.Equal(t, wire.StatusOK, r.Status)
		}
	})
}

// checkAll reads the keys putAll wrote and compares them.
func checkAll(t *testing.T, cl *client.Client, prefix string, n int, value func(i int) string) {
	t.Helper()
	getAll(t, cl, prefix, n, func(i int, key string, r wire.Result) {
		require.Equal(t, wire.StatusOK, r.Status, "key %s", key)
		require.Equal(t, value(i), r.Value, "key %s", key)
	})
}

// getAll reads keys prefix0..prefix{n-1} in batches and calls check with
// each key's index, the key and its result; it fails the test if a batch
// fails.
func getAll(t *testing.T, cl *client.Client, prefix string, n int, check func(i int, key string, r wire.Result)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	get := func(key string, _ int) wire.Op { return wire.Op{Code: wire.OpGet, Key: key} }
	inBatches(prefix, n, get, func(start int, ops []wire.Op) {
		res, err := cl.Do(ctx, ops)
		require.NoError(t, err)
		for j, r := range res {
			check(start+j, ops[j].Key, r)
		}
	})
}

func valueOf(tag string) func(int) string {
	return func(i int) string { return fmt.Sprintf("%s-%d-%s", tag, i, strings.Repeat("x", i%50)) }
}
