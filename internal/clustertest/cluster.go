package clustertest

import (
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/auth"
	"github.com/batchkv/batchkv/internal/faultnet"
	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/kvs/replica"
)

// Cluster is n replicated servers on loopback TCP, made by New. Server i
// keeps its address and data dir across Stop and Start.
type Cluster struct {
	t      testing.TB
	addrs  []string
	dirs   []string
	shards int
	rf     int
	links  *faultnet.Links
	logger *slog.Logger

	initial     int
	inMemory    bool
	timing      replica.Timing
	readMode    string
	tls         bool
	prepareDirs []func(i int, dir string)
	configHooks []func(i int, cfg *kvs.Config)
	serverHooks []func(i int, s *kvs.Server)
	// With WithTLS: every server's identity, the clients', and the one
	// that may change membership.
	nodeID, clientID, adminID *auth.Identity

	mu      sync.Mutex
	servers []*kvs.Server // nil while stopped
}

// New starts a cluster of n servers holding shards shards at replication
// factor rf (all n, or those of WithInitial), and stops it when the test
// ends.
func New(t testing.TB, n, rf, shards int, opts ...Option) *Cluster {
	t.Helper()
	c := &Cluster{t: t, rf: rf, shards: shards, servers: make([]*kvs.Server, n)}
	for _, o := range opts {
		o(c)
	}
	if c.tls {
		certs, err := auth.MakeLocal(filepath.Join(t.TempDir(), "certs"), []string{"127.0.0.1"})
		require.NoError(t, err)
		c.nodeID, c.clientID, c.adminID = certs.Node, certs.Client, certs.Admin
	}
	// The servers' ports stay taken until the proxies have theirs, or a
	// proxy could be given a server's port.
	var held []net.Listener
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		held = append(held, ln)
		c.addrs = append(c.addrs, ln.Addr().String())
		c.dirs = append(c.dirs, t.TempDir())
		for _, prepare := range c.prepareDirs {
			prepare(i, c.dirs[i])
		}
	}
	c.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		c.logger = slog.New(slog.NewTextHandler(logWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	links, err := faultnet.NewLinks(c.addrs)
	require.NoError(t, err)
	c.links = links
	for _, ln := range held {
		require.NoError(t, ln.Close())
	}
	t.Cleanup(func() {
		for i := range c.servers {
			c.Stop(i)
		}
		c.links.Close()
	})
	for i := range n {
		if c.initial == 0 || i < c.initial {
			c.Start(i) // spares are started by the test
		}
	}
	return c
}

// Start (re)starts server i on its address and data dir. A spare (see
// WithInitial) starts with Config.Join set to server 0.
func (c *Cluster) Start(i int) {
	c.t.Helper()
	cfg := kvs.Config{Self: c.addrs[i], Peers: c.addrs, RF: c.rf, Shards: c.shards, DataDir: c.dirs[i],
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
	for _, edit := range c.configHooks {
		edit(i, &cfg)
	}
	srv, err := kvs.New(cfg)
	require.NoError(c.t, err)
	var ln net.Listener
	require.Eventually(c.t, func() bool {
		ln, err = net.Listen("tcp", c.addrs[i])
		return err == nil
	}, 5*time.Second, 20*time.Millisecond, "listen on %s: %v", c.addrs[i], err)
	for _, hook := range c.serverHooks {
		hook(i, srv)
	}
	go func() { _ = srv.Serve(ln) }()
	c.mu.Lock()
	c.servers[i] = srv
	c.mu.Unlock()
}

// Stop closes server i, if running: its connections drop at once, as
// when its process dies.
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	srv := c.servers[i]
	c.servers[i] = nil
	c.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// Isolate cuts (on) or restores (off) every Raft link to and from server
// i.
func (c *Cluster) Isolate(i int, on bool) {
	c.t.Helper()
	require.NoError(c.t, c.links.Isolate(i, on))
}

// Server returns server i, or nil while it is stopped.
func (c *Cluster) Server(i int) *kvs.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.servers[i]
}

// Addrs returns every server's address, members and spares, by index.
// The caller must not change it.
func (c *Cluster) Addrs() []string { return c.addrs }

// Members returns the addresses of the servers that started as the
// cluster's members (all, without WithInitial).
func (c *Cluster) Members() []string {
	if c.initial > 0 {
		return c.addrs[:c.initial]
	}
	return c.addrs
}

// Dirs returns every server's data dir, by index. The caller must not
// change it.
func (c *Cluster) Dirs() []string { return c.dirs }

// Shards returns the number of shards the cluster started with.
func (c *Cluster) Shards() int { return c.shards }

// RF returns the cluster's replication factor.
func (c *Cluster) RF() int { return c.rf }

// Links returns the fault proxies of the servers' Raft links.
func (c *Cluster) Links() *faultnet.Links { return c.links }

// Logger returns the logger the servers log to (discarded unless the
// test runs with -v, then warnings and errors go to the test log).
func (c *Cluster) Logger() *slog.Logger { return c.logger }

// SetLogger makes the servers started from now on log to l (e.g. a
// buffer a test then searches).
func (c *Cluster) SetLogger(l *slog.Logger) { c.logger = l }

// logWriter writes a server's log lines to the test's log.
type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
