// Package kvs is the server: net/rpc's KVService in front of one backend.
//
// One port serves four protocols (conn.go tells them apart from a
// connection's first bytes):
//
//   - binary: a connection that opens with wire.Preamble speaks the binary
//     codec (package wire), the fast path that the client library uses;
//   - Raft stream: one that opens with transport.Preamble carries one
//     shard's Raft traffic between replicas;
//   - RESP: one that opens with a Redis command is served by package
//     kvs/respserver (resp.go hands it over);
//   - HTTP: any other is handed to an HTTP server that serves net/rpc
//     over HTTP at rpc.DefaultRPCPath with gob (gob.go), which is what
//     the course skeleton's client (rpc.DialHTTP, KVService.Get/Put) and
//     the admin RPCs speak.
//
// The binary, RESP and HTTP ones reach the same Service (service.go).
//
//	ln, _ := net.Listen("tcp", ":8080")
//	srv, _ := kvs.New(kvs.Config{})
//	go srv.Serve(ln)
//	defer srv.Close()
//
// Config (config.go) and Limits (limits.go) configure a server. The
// Service checks limits and counts (package kvs/stats); one backend
// (package kvs/backend), chosen from the Config when the server starts
// (start.go), applies:
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
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/rpc"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batchkv/batchkv/internal/handoff"
	"github.com/batchkv/batchkv/kvs/backend"
	"github.com/batchkv/batchkv/kvs/memlimit"
	"github.com/batchkv/batchkv/kvs/reaper"
	"github.com/batchkv/batchkv/kvs/respserver"
	"github.com/batchkv/batchkv/kvs/stats"
	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/ring"
	"github.com/batchkv/batchkv/wire"
)

// Server serves a Service on a listener.
type Server struct {
	cfg       Config
	limits    Limits
	serverTLS *tls.Config // nil: plaintext
	stats     stats.Stats
	svc       *Service
	rpc       *rpc.Server
	http      *http.Server
	httpLn    *handoff.Listener
	log       *slog.Logger
	started   time.Time

	replies      *backend.Budget  // value bytes of unwritten replies, server-wide
	requests     *backend.Budget  // bytes of requests not yet answered, server-wide (RequestBytes)
	apply        *backend.Applier // the backend's, which charges replies to it
	calls        sync.Map         // decoded request arguments -> *call
	lastDigest   atomic.Int64     // unix nanoseconds of the last digest granted without TLS
	resp         *respserver.Server
	answersAlone bool // RF=1: a batch waits on no peer (codec.go's quick)

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
		perHost: map[string]int{}, started: time.Now(), replies: backend.NewBudget(cfg.Limits.ReplyBudget),
		requests: backend.NewBudget(cfg.Limits.RequestBudget), stop: make(chan struct{})}
	if cfg.Identity != nil {
		s.serverTLS = cfg.Identity.ServerConfig()
	}
	s.resp = respserver.New(respserver.Config{FrameTimeout: cfg.FrameTimeout, TLS: s.serverTLS != nil, Logger: cfg.Logger})
	s.apply = backend.NewApplier(&s.stats, s.replies)
	if stores, _ := memlimit.Shares(cfg.MaxMemory); cfg.MaxMemory > 0 || cfg.storeLimit > 0 {
		s.apply.Limit = backend.NewStoreLimit(cmp.Or(cfg.storeLimit, stores), cfg.account)
	}
	be, layout, err := newBackend(&cfg, &s.stats, s.apply)
	if err != nil {
		return nil, err
	}
	switch be.(type) {
	case *backend.Local, *backend.Ring:
		s.answersAlone = true
	}
	s.svc = &Service{backend: be, stats: &s.stats, layout: layout, self: cfg.Self, calls: s.callOf, node: s.nodeStats}
	s.rpc = rpc.NewServer()
	if err := s.rpc.RegisterName("KVService", s.svc); err != nil {
		_ = be.Close()
		return nil, fmt.Errorf("kvs: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc(rpc.DefaultRPCPath, s.serveRPCOverHTTP)
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: cfg.HandshakeTimeout, IdleTimeout: cfg.Limits.IdleTimeout,
		ErrorLog: slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn)}
	return s, nil
}

// Stats returns the server's counters.
func (s *Server) Stats() *stats.Stats { return &s.stats }

// Store returns the store of a memory-only server; a replicated server's
// shards keep stores of their own.
func (s *Server) Store() store.Store { return s.cfg.Store }

// Layout returns how the server places keys now: a replicated server's
// current shard map (its servers, shards, RF and epoch), which a server
// started with Join learns from the cluster.
func (s *Server) Layout() wire.ClusterMap { return s.svc.currentLayout() }

// Ring returns the server's ring, or nil unless it is one of several
// memory-only servers.
func (s *Server) Ring() *ring.Ring {
	if b, ok := s.svc.backend.(*backend.Ring); ok {
		return b.Ring()
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
	if s.cfg.GoMemoryLimit && s.cfg.MaxMemory > 0 {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			memlimit.Keep(s.stop, s.cfg.MaxMemory, s.cfg.account.Bytes)
		}()
	}
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
	st := &connState{raw: c, host: host, replies: backend.NewBudget(s.limits.ConnReplyBudget),
		requests: backend.NewBudget(s.limits.ConnRequestBudget)}
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
	// Its handlers must not wait on its own budgets any more.
	st.replies.Close()
	st.requests.Close()
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
// connections that have carried an RPC (see connState), and, while the
// server is over its reply budget, those that stall (stalled), at the
// pace of package reaper: a look a second at most within the budget, and
// every quarter of Limits.StallTimeout over it.
func (s *Server) reap() {
	defer s.wg.Done()
	every, stallEvery := reaper.Intervals(s.limits.IdleTimeout, s.limits.StallTimeout, cmp.Or(s.cfg.reapEveryMax, time.Second))
	reaper.Run(s.stop, every, stallEvery, s.replies, s.reapOnce)
}

// reapOnce closes the connections idle at now, and, while the server is
// over its reply budget, those stalled.
func (s *Server) reapOnce(now time.Time) {
	cutoff := now.Add(-s.limits.IdleTimeout).UnixNano()
	over := s.replies.Over()
	var idle, stalled []*connState
	s.mu.Lock()
	for st := range s.conns {
		switch {
		case st.inflight.Load() == 0 && st.active.Load() < cutoff && !st.carried.Load():
			idle = append(idle, st)
		case over && s.stalled(st, now):
			stalled = append(stalled, st)
		}
	}
	s.mu.Unlock()
	for _, st := range idle {
		s.stats.IdleClosed.Add(1)
		s.drop(st)
	}
	for _, st := range stalled {
		s.stats.StalledClosed.Add(1)
		s.drop(st)
	}
}

// stalled reports whether st's replies hold bytes and it has written none
// for Limits.StallTimeout since they began to: a peer that stopped
// reading, whose replies hold what other requests wait for. (Requests
// held by a peer that stops reading are bounded by its
// Limits.ConnRequestBudget, and freed after Limits.WriteTimeout: a write
// that waits long is no sign of a stall on a link with a long delay.)
func (s *Server) stalled(st *connState, now time.Time) bool {
	held, since := st.replies.HeldSince()
	if held == 0 {
		return false
	}
	last := max(since.UnixNano(), st.wrote.Load())
	return now.UnixNano()-last > int64(s.limits.StallTimeout)
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
	// Handlers waiting for budget must end: nothing of theirs is written
	// now. The server's reply budget closes first, which wakes its
	// waiters, and each connection's budgets as soon as it closes, which
	// wakes theirs: a woken batch then reads no values for a reply that
	// cannot be written (Applier.admit), where else every batch a stalled
	// peer had pipelined would read its values in turn before the server
	// could stop.
	s.replies.Close()
	for _, st := range conns {
		_ = st.raw.Close()
		st.replies.Close()
		st.requests.Close()
	}
	s.requests.Close()
	if s.httpLn != nil {
		_ = s.http.Close()
	}
	s.wg.Wait()
	return s.svc.backend.Close()
}
