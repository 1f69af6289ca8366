// Package kvs is the server: net/rpc's KVService in front of one backend.
//
// One port serves three protocols (conn.go tells them apart). A connection
// that opens with wire.Preamble speaks the binary codec (package wire), the
// fast path that the client library uses. One that opens with
// transport.Preamble carries one shard's Raft traffic between replicas. Any
// other connection is handed to an HTTP server that serves net/rpc over
// HTTP at rpc.DefaultRPCPath with gob, which is what the course skeleton's
// client (rpc.DialHTTP, KVService.Get/Put) and the admin RPCs speak. The
// binary and HTTP ones reach the same Service.
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
//     Replicas > 1, a DataDir, or InMemory (one-replica groups in memory,
//     whose shards can move).
//
// The data path: client -> ring or shard map -> batcher -> RPC (this port)
// -> Service -> backend -> store.
package kvs

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/rpc"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batchkv/batchkv/auth"
	"github.com/batchkv/batchkv/internal/handoff"
	"github.com/batchkv/batchkv/kvs/replica"
	"github.com/batchkv/batchkv/kvs/replica/raftstore"
	"github.com/batchkv/batchkv/kvs/replica/transport"
	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/ring"
	"github.com/batchkv/batchkv/wire"
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
	// HandshakeTimeout bounds how long a new connection may take to
	// complete its TLS handshake and send the bytes that name its
	// protocol. Default 10s.
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
	// Zero or one without a DataDir (or InMemory) is the memory-only
	// server of the fixed ring.
	Replicas int
	// Shards is the number of shards of a replicated cluster; zero means
	// one per server. Every server and client must use the same.
	Shards int
	// Join is the address of a member of a running replicated cluster
	// that this server joins: it takes the cluster's shards, replication
	// factor and map from it (Peers, Shards and Replicas are then
	// ignored), hosts no shard until a move places one here (kvsctl
	// add-server), and restarts from the map it saved in DataDir.
	Join string
	// DataDir holds the Raft logs and snapshots, one folder per shard.
	// Required when replicated, unless InMemory.
	DataDir string
	// InMemory makes a memory-only server whose shards can move: each
	// shard is a one-replica Raft group (Replicas must be 1) whose log,
	// snapshots and map stay in memory, in place of the fixed ring. It
	// needs no DataDir, and keeps nothing across a restart: started again
	// (with Peers or Join) in a running cluster, it takes the cluster's
	// map and serves the replicas that map places on it again, empty,
	// except those whose group lives on at another member (a move was
	// under way), which it rejoins.
	InMemory bool
	// NoSync skips fsync of the Raft log: an acknowledged write may be lost
	// if a majority of a shard's machines lose power. For experiments only.
	NoSync bool
	// RaftLog is how each shard keeps its Raft log in DataDir; "" means
	// raftstore.LogWAL.
	RaftLog raftstore.LogFormat
	// Raft sets the Raft timeouts and failover delays; zero means
	// replica.DefaultTiming().
	Raft replica.Timing
	// ReadMode is how a replicated server serves a batch of reads: ""
	// or ReadBarrier commits a barrier entry first, which needs no clock
	// assumption; ReadLease serves it from a leader's store within the
	// leader's lease, with no log entry (see replica.Config.LeaseReads).
	ReadMode string
	// plantLease, set only by tests (export_test.go), plants a bug for the
	// checkers: a read lease this long, not checked for safety.
	plantLease time.Duration
	// SessionTTL is how long a shard remembers a client session after its
	// last batch, to suppress retried duplicates. Default 10 minutes.
	SessionTTL time.Duration
	// DialRaft opens connections to peers for Raft; nil means plain TCP.
	// Tests route it through fault-injecting proxies. With an Identity,
	// TLS runs over what it opens.
	DialRaft transport.DialFunc

	// Identity, when set, makes every connection TLS 1.3 with certificates
	// verified both ways: the server's own for listening and for dialing
	// peers, and a certificate of the same CA required of every peer.
	// Only node certificates may speak Raft, and only for the shards whose
	// replicas' hosts they name. Nil means plaintext: anyone who reaches
	// the port may do anything, Raft included.
	Identity *auth.Identity
	// Limits bound what any one peer can make the server hold; zero fields
	// take DefaultLimits'.
	Limits Limits
}

// The read modes of a replicated server (Config.ReadMode).
const (
	ReadBarrier = "barrier"
	ReadLease   = "lease"
)

// Replicated reports whether cfg makes a replicated server.
func (c *Config) Replicated() bool {
	return c.Replicas > 1 || c.DataDir != "" || c.Join != "" || c.InMemory
}

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
	var err error
	if c.Limits, err = c.Limits.withDefaults(); err != nil {
		return err
	}
	if c.Identity != nil && c.Identity.Role != auth.RoleNode {
		return fmt.Errorf("kvs: a server needs a node certificate, not one with role %q", c.Identity.Role)
	}
	if len(c.Peers) > 0 && !slices.Contains(c.Peers, c.Self) {
		return fmt.Errorf("%w: %q not in %v", errNotInPeers, c.Self, c.Peers)
	}
	if c.Replicated() {
		switch {
		case c.InMemory && c.DataDir != "":
			return errors.New("kvs: InMemory and a DataDir: give one")
		case c.InMemory && c.Replicas > 1:
			return fmt.Errorf("kvs: InMemory with %d replicas: replicas that forget their Raft log and vote on restart can lose acknowledged writes; give a DataDir", c.Replicas)
		case c.DataDir == "" && !c.InMemory:
			return errors.New("kvs: a replicated server needs a DataDir")
		case c.Self == "":
			return errors.New("kvs: a replicated server needs Self, its address as peers and clients reach it")
		}
		if c.Raft == (replica.Timing{}) {
			c.Raft = replica.DefaultTiming()
		}
		switch c.ReadMode {
		case "", ReadBarrier, ReadLease:
		default:
			return fmt.Errorf("kvs: read mode %q: want %q or %q", c.ReadMode, ReadBarrier, ReadLease)
		}
	} else if c.ReadMode == ReadLease {
		return errors.New("kvs: read mode lease needs a replicated server (-rf above 1, or a data dir)")
	}
	return nil
}

// Server serves a Service on a listener.
type Server struct {
	cfg       Config
	limits    Limits
	serverTLS *tls.Config // nil: plaintext
	stats     Stats
	svc       *Service
	rpc       *rpc.Server
	http      *http.Server
	httpLn    *handoff.Listener
	log       *slog.Logger
	started   time.Time

	replies    *budget      // value bytes of unwritten replies, server-wide
	calls      sync.Map     // decoded request arguments -> *call
	lastDigest atomic.Int64 // unix nanoseconds of the last digest granted without TLS
	respIDs    atomic.Int64 // the last RESP connection's id (CLIENT ID)

	mu      sync.Mutex
	ln      net.Listener            // guarded by mu
	conns   map[*connState]struct{} // guarded by mu: open connections
	perHost map[string]int          // guarded by mu: open connections by remote IP
	closed  bool                    // guarded by mu
	stop    chan struct{}           // closed by Close
	wg      sync.WaitGroup          // connection handlers, the HTTP server, the reaper
}

// New returns a server for cfg. It serves nothing until Serve; a
// replicated server's Raft groups start at once, and Close stops them.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, limits: cfg.Limits, log: cfg.Logger, conns: map[*connState]struct{}{},
		perHost: map[string]int{}, started: time.Now(), replies: newBudget(cfg.Limits.ReplyBudget), stop: make(chan struct{})}
	if cfg.Identity != nil {
		s.serverTLS = cfg.Identity.ServerConfig()
	}
	be, layout, err := newBackend(&cfg, &s.stats, &applier{stats: &s.stats, replies: s.replies,
		slots: make(chan struct{}, buildSlots()), charge: s.charge})
	if err != nil {
		return nil, err
	}
	s.svc = &Service{backend: be, stats: &s.stats, layout: layout, self: cfg.Self, calls: s.callOf, node: s.nodeStats}
	s.rpc = rpc.NewServer()
	if err := s.rpc.RegisterName("KVService", s.svc); err != nil {
		_ = be.close()
		return nil, fmt.Errorf("kvs: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc(rpc.DefaultRPCPath, s.serveRPCOverHTTP)
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: cfg.HandshakeTimeout, IdleTimeout: cfg.Limits.IdleTimeout,
		ErrorLog: slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn)}
	return s, nil
}

// Stats returns the server's counters.
func (s *Server) Stats() *Stats { return &s.stats }

// Store returns the store of a memory-only server; a replicated server's
// shards keep stores of their own.
func (s *Server) Store() store.Store { return s.cfg.Store }

// Layout returns how the server places keys now: a replicated server's
// current shard map (its servers, shards, RF and epoch), which a server
// started with Join learns from the cluster.
func (s *Server) Layout() wire.Layout { return s.svc.currentLayout() }

// Ring returns the server's ring, or nil unless it is one of several
// memory-only servers.
func (s *Server) Ring() *ring.Ring {
	if b, ok := s.svc.backend.(*ringBackend); ok {
		return b.ring
	}
	return nil
}

// Accept errors are retried after a pause that doubles from
// acceptBackoffMin to acceptBackoffMax, as net/http does: running out of
// file descriptors (EMFILE) must not end the server.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// Serve accepts connections on ln until Close, and returns nil after Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed || s.ln != nil {
		s.mu.Unlock()
		_ = ln.Close()
		return errors.New("kvs: server closed or already serving")
	}
	s.ln = ln
	s.httpLn = handoff.New(ln.Addr())
	s.wg.Add(2)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		_ = s.http.Serve(s.httpLn)
	}()
	go s.reap()
	var backoff time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return nil
			}
			backoff = min(max(2*backoff, acceptBackoffMin), acceptBackoffMax)
			s.log.Warn("accept failed; retrying", "err", err, "in", backoff)
			select {
			case <-time.After(backoff):
			case <-s.stop:
				return nil
			}
			continue
		}
		backoff = 0
		st, why := s.track(conn)
		if st == nil {
			if why != "" {
				s.stats.BadConns.Add(1)
				s.log.Warn("refusing connection", "remote", conn.RemoteAddr(), "reason", why)
			}
			_ = conn.Close()
			continue
		}
		go func() {
			defer s.wg.Done()
			s.handle(st)
		}()
	}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// track records a new connection and counts its handler in wg, or refuses
// it (nil) when the server is closed (no reason) or over a connection cap
// (the reason).
func (s *Server) track(c net.Conn) (*connState, string) {
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		host = c.RemoteAddr().String()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, ""
	case len(s.conns) >= s.limits.MaxConns:
		return nil, fmt.Sprintf("%d connections open, limit %d", len(s.conns), s.limits.MaxConns)
	case s.perHost[host] >= s.limits.MaxConnsPerHost:
		return nil, fmt.Sprintf("%d connections open from %s, limit %d", s.perHost[host], host, s.limits.MaxConnsPerHost)
	}
	st := &connState{raw: c, host: host, replies: newBudget(s.limits.ConnReplyBudget)}
	st.touch()
	s.conns[st] = struct{}{}
	s.perHost[host]++
	s.wg.Add(1) // its handler's; under mu, so that Close's Wait cannot start between
	return st, ""
}

// drop closes a connection and forgets it; it may be called more than
// once.
func (s *Server) drop(st *connState) {
	_ = st.raw.Close()
	st.closed.Do(func() {
		s.mu.Lock()
		delete(s.conns, st)
		if s.perHost[st.host]--; s.perHost[st.host] <= 0 {
			delete(s.perHost, st.host)
		}
		s.mu.Unlock()
	})
}

// reap closes, every so often, the connections that have had no request
// in flight and moved no byte for Limits.IdleTimeout, except Raft
// connections that have carried an RPC (see connState).
func (s *Server) reap() {
	defer s.wg.Done()
	tick := time.NewTicker(min(s.limits.IdleTimeout/4, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-tick.C:
			cutoff := now.Add(-s.limits.IdleTimeout).UnixNano()
			var idle []*connState
			s.mu.Lock()
			for st := range s.conns {
				if st.inflight.Load() == 0 && st.active.Load() < cutoff && !st.carried.Load() {
					idle = append(idle, st)
				}
			}
			s.mu.Unlock()
			for _, st := range idle {
				s.stats.IdleClosed.Add(1)
				s.drop(st)
			}
		}
	}
}

// Conns returns the number of open connections.
func (s *Server) Conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
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
	close(s.stop)
	if s.ln != nil {
		_ = s.ln.Close()
	}
	conns := make([]*connState, 0, len(s.conns))
	for st := range s.conns {
		conns = append(conns, st)
	}
	s.mu.Unlock()
	for _, st := range conns {
		_ = st.raw.Close()
	}
	if s.httpLn != nil {
		_ = s.http.Close()
	}
	s.wg.Wait()
	return s.svc.backend.close()
}
