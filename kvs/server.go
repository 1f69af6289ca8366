// Package kvs is the server: net/rpc's KVService in front of one backend.
//
// One port serves two protocols. A connection that opens with
// wire.Preamble speaks the binary codec (package wire), the fast path that
// the client library uses. Any other connection is handed to an HTTP server
// that serves net/rpc over HTTP at rpc.DefaultRPCPath with gob, which is
// what the course skeleton's client (rpc.DialHTTP, KVService.Get/Put)
// speaks. Both reach the same Service.
//
//	ln, _ := net.Listen("tcp", ":8080")
//	srv, _ := kvs.New(kvs.Config{})
//	go srv.Serve(ln)
//	defer srv.Close()
//
// The Service checks limits and counts; one backend, chosen from the
// Config when the server starts, applies (backend.go):
//
//   - local: a single memory-only server that owns every key, in one
//     store.Store (package kvs/store);
//   - ring: several memory-only servers, each given the full list
//     (Config.Peers) and its own name in it (Config.Self); keys are assigned
//     by the ring over that list, and a server forwards ops it does not own;
//   - replicated: shards that are Raft groups (package kvs/replica), with
//     Replicas > 1 or a DataDir.
//
// The data path: client -> ring or shard map -> batcher -> RPC (this port)
// -> Service -> backend -> store.
package kvs

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/rpc"
	"slices"
	"sync"
	"time"

	"github.com/batchkv/batchkv/internal/handoff"
	"github.com/batchkv/batchkv/kvs/replica"
	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/ring"
)

var errNotInPeers = errors.New("kvs: Self is not among Peers")

// Config configures a Server. Zero fields take the defaults given.
type Config struct {
	// Peers are the host:port addresses of every server of the cluster,
	// this one included, as clients reach them. Empty means this server is
	// alone and owns every key.
	Peers []string
	// Self is this server's entry in Peers. Required when Peers is set.
	Self string
	// VirtualNodes per server on the ring; clients must use the same.
	// Zero means ring.DefaultVirtualNodes.
	VirtualNodes int
	// Store holds the data of a memory-only server. Nil means a new store
	// of kind store.DefaultKind. A replicated server keeps one store per
	// shard and only takes Store's kind from it: a *store.SyncMap makes
	// SyncMaps, anything else Arenas.
	Store store.Store
	// HandshakeTimeout bounds how long a new connection may take to send
	// its first bytes. Default 10s.
	HandshakeTimeout time.Duration
	// FrameTimeout bounds how long the rest of a binary frame may take to
	// arrive once its first byte has; a connection that stalls mid-frame
	// is closed. Default 30s.
	FrameTimeout time.Duration
	// Logger receives connection errors. Nil means slog.Default().
	Logger *slog.Logger

	// Replicas is the replication factor. With Replicas > 1, or with a
	// DataDir, the server is replicated: keys map to Shards shards, each a
	// Raft group on Replicas servers (package shard places them), and
	// every write is on a majority's disk before it is acknowledged.
	// Zero or one without a DataDir is the memory-only server.
	Replicas int
	// Shards is the number of shards of a replicated cluster; zero means
	// one per server. Every server and client must use the same.
	Shards int
	// DataDir holds the Raft logs and snapshots, one folder per shard.
	// Required when replicated.
	DataDir string
	// NoSync skips fsync of the Raft log: an acknowledged write may be lost
	// if a majority of a shard's machines lose power. For experiments only.
	NoSync bool
	// Raft sets the Raft timeouts and failover delays; zero means
	// replica.DefaultTiming().
	Raft replica.Timing
	// SessionTTL is how long a shard remembers a client session after its
	// last batch, to suppress retried duplicates. Default 10 minutes.
	SessionTTL time.Duration
	// DialRaft opens connections to peers for Raft; nil means plain TCP.
	// Tests route it through fault-injecting proxies.
	DialRaft replica.DialFunc
}

// Replicated reports whether cfg makes a replicated server.
func (c *Config) Replicated() bool { return c.Replicas > 1 || c.DataDir != "" }

func (c *Config) validate() error {
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = 10 * time.Second
	}
	if c.FrameTimeout == 0 {
		c.FrameTimeout = 30 * time.Second
	}
	if c.Store == nil {
		c.Store, _ = store.New(store.DefaultKind)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.HandshakeTimeout < 0 || c.FrameTimeout < 0 {
		return errors.New("kvs: negative timeout")
	}
	if len(c.Peers) > 0 && !slices.Contains(c.Peers, c.Self) {
		return fmt.Errorf("%w: %q not in %v", errNotInPeers, c.Self, c.Peers)
	}
	if c.Replicated() {
		switch {
		case c.DataDir == "":
			return errors.New("kvs: a replicated server needs a DataDir")
		case c.Self == "":
			return errors.New("kvs: a replicated server needs Self, its address as peers and clients reach it")
		}
		if c.Raft == (replica.Timing{}) {
			c.Raft = replica.DefaultTiming()
		}
	}
	return nil
}

// Server serves a Service on a listener.
type Server struct {
	cfg    Config
	stats  Stats
	svc    *Service
	rpc    *rpc.Server
	http   *http.Server
	httpLn *handoff.Listener
	log    *slog.Logger

	mu     sync.Mutex
	ln     net.Listener          // guarded by mu
	conns  map[net.Conn]struct{} // guarded by mu: open client connections
	closed bool                  // guarded by mu
	wg     sync.WaitGroup        // connection handlers and the HTTP server
}

// New returns a server for cfg. It serves nothing until Serve; a
// replicated server's Raft groups start at once, and Close stops them.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, conns: map[net.Conn]struct{}{}}
	be, layout, err := newBackend(&cfg, &s.stats)
	if err != nil {
		return nil, err
	}
	s.svc = &Service{backend: be, stats: &s.stats, layout: layout, self: cfg.Self}
	s.rpc = rpc.NewServer()
	if err := s.rpc.RegisterName("KVService", s.svc); err != nil {
		_ = be.close()
		return nil, fmt.Errorf("kvs: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(rpc.DefaultRPCPath, s.rpc)
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: cfg.HandshakeTimeout,
		ErrorLog: slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn)}
	return s, nil
}

// Stats returns the server's counters.
func (s *Server) Stats() *Stats { return &s.stats }

// Store returns the store of a memory-only server; a replicated server's
// shards keep stores of their own.
func (s *Server) Store() store.Store { return s.cfg.Store }

// Ring returns the server's ring, or nil unless it is one of several
// memory-only servers.
func (s *Server) Ring() *ring.Ring {
	if b, ok := s.svc.backend.(*ringBackend); ok {
		return b.ring
	}
	return nil
}

// Serve accepts connections on ln until Close, and returns nil after Close
// or the listener's error otherwise.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed || s.ln != nil {
		s.mu.Unlock()
		_ = ln.Close()
		return errors.New("kvs: server closed or already serving")
	}
	s.ln = ln
	s.httpLn = handoff.New(ln.Addr())
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		_ = s.http.Serve(s.httpLn)
	}()
	for {
		conn, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			return fmt.Errorf("kvs: accept: %w", err)
		}
		if !s.track(conn) {
			_ = conn.Close()
			return nil
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(conn)
		}()
	}
}

func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Close stops accepting, closes every connection and waits for their
// handlers. It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	if s.ln != nil {
		_ = s.ln.Close()
	}
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	if s.httpLn != nil {
		_ = s.http.Close()
	}
	s.wg.Wait()
	return s.svc.backend.close()
}
