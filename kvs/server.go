// Package kvs is the server: a Store behind net/rpc's KVService.
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
// With several servers, each is given the full list (Config.Peers) and its
// own name in it (Config.Self); keys are assigned to servers by the ring
// over that list, and a server forwards ops it does not own.
package kvs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/rpc"
	"slices"
	"sync"
	"time"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/netcount"
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
	// Store holds the data. Nil means a new store of kind DefaultStore.
	Store Store
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
	// Raft sets the Raft timeouts; zero means DefaultRaftTiming().
	Raft RaftTiming
	// SessionTTL is how long a shard remembers a client session after its
	// last batch, to suppress retried duplicates. Default 10 minutes.
	SessionTTL time.Duration
	// DialRaft opens connections to peers for Raft; nil means plain TCP.
	// Tests route it through fault-injecting proxies.
	DialRaft DialFunc
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
		c.Store, _ = NewStore(DefaultStore)
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
		if c.Raft == (RaftTiming{}) {
			c.Raft = DefaultRaftTiming()
		}
		if c.SessionTTL == 0 {
			c.SessionTTL = defaultSessionTTL
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
	httpLn *chanListener
	log    *slog.Logger

	mu     sync.Mutex
	ln     net.Listener          // guarded by mu
	conns  map[net.Conn]struct{} // guarded by mu: open client connections
	closed bool                  // guarded by mu
	wg     sync.WaitGroup        // connection handlers and the HTTP server
}

// New returns a server for cfg. It serves nothing until Serve.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, conns: map[net.Conn]struct{}{}}
	s.svc = &Service{store: cfg.Store, stats: &s.stats}
	switch {
	case cfg.Replicated():
		repl, err := openReplication(&cfg)
		if err != nil {
			return nil, err
		}
		s.svc.repl = repl
	case len(cfg.Peers) > 0:
		r, err := ring.New(cfg.Peers, cfg.VirtualNodes)
		if err != nil {
			return nil, fmt.Errorf("kvs: %w", err)
		}
		fwd, err := client.New(client.Config{Servers: cfg.Peers, VirtualNodes: cfg.VirtualNodes})
		if err != nil {
			return nil, fmt.Errorf("kvs: forwarding client: %w", err)
		}
		s.svc.ring, s.svc.self, s.svc.fwd = r, slices.Index(cfg.Peers, cfg.Self), fwd
	}
	s.svc.layout = wire.Layout{Servers: cfg.Peers, VirtualNodes: cfg.VirtualNodes}
	if s.svc.repl != nil {
		l := s.svc.repl.layout
		s.svc.layout = wire.Layout{Servers: l.Servers(), VirtualNodes: cfg.VirtualNodes, Replicas: l.RF(), Shards: l.Shards()}
	} else if len(cfg.Peers) == 0 && cfg.Self != "" {
		s.svc.layout.Servers = []string{cfg.Self}
	}

	s.rpc = rpc.NewServer()
	if err := s.rpc.RegisterName("KVService", s.svc); err != nil {
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

// Store returns the server's store.
func (s *Server) Store() Store { return s.cfg.Store }

// Ring returns the server's ring, or nil when it owns every key.
func (s *Server) Ring() *ring.Ring { return s.svc.ring }

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
	s.httpLn = newChanListener(ln.Addr())
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

// handle tells the protocol of a new connection by its first bytes.
func (s *Server) handle(raw net.Conn) {
	counted := &netcount.Conn{Conn: raw, In: &s.stats.BytesIn, Out: &s.stats.BytesOut}
	br := bufio.NewReaderSize(counted, 64<<10)
	_ = raw.SetReadDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	head, err := br.Peek(len(wire.Preamble))
	_ = raw.SetReadDeadline(time.Time{})
	if err != nil && len(head) == 0 {
		s.untrack(raw)
		_ = raw.Close()
		return
	}
	if string(head) == RaftPreamble {
		s.handleRaft(raw, counted, br)
		return
	}
	if string(head) == wire.Preamble {
		_, _ = br.Discard(len(wire.Preamble))
		codec := &loggedCodec{ServerCodec: wire.NewServerCodec(counted, br, s.cfg.FrameTimeout), s: s, remote: raw.RemoteAddr()}
		s.rpc.ServeCodec(codec) // returns when the connection ends, and closes it
		s.untrack(raw)
		return
	}
	// Not ours: HTTP (the skeleton's net/rpc transport) or garbage, which
	// the HTTP server answers with 400 and closes.
	if !s.httpLn.offer(&peekedConn{Conn: counted, r: br, done: func() { s.untrack(raw) }}) {
		s.untrack(raw)
		_ = raw.Close()
	}
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
	if s.svc.fwd != nil {
		_ = s.svc.fwd.Close()
	}
	if s.svc.repl != nil {
		return s.svc.repl.close()
	}
	return nil
}

// handleRaft hands a Raft connection to its shard, or closes it.
func (s *Server) handleRaft(raw, counted net.Conn, br *bufio.Reader) {
	_, _ = br.Discard(len(RaftPreamble))
	if s.svc.repl == nil {
		s.log.Warn("raft connection to a server that is not replicated", "remote", raw.RemoteAddr())
		s.untrack(raw)
		_ = raw.Close()
		return
	}
	sh, err := readRaftShard(raw, br, s.cfg.HandshakeTimeout)
	if err == nil {
		err = s.svc.repl.acceptRaft(&peekedConn{Conn: counted, r: br, done: func() { s.untrack(raw) }}, sh)
	}
	if err != nil {
		s.log.Warn("refusing raft connection", "remote", raw.RemoteAddr(), "err", err)
		s.untrack(raw)
		_ = raw.Close()
	}
}

// loggedCodec logs why a binary connection ended, unless it ended cleanly.
type loggedCodec struct {
	*wire.ServerCodec
	s      *Server
	remote net.Addr
}

func (c *loggedCodec) ReadRequestHeader(r *rpc.Request) error {
	err := c.ServerCodec.ReadRequestHeader(r)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		c.bad(err)
	}
	return err
}

func (c *loggedCodec) ReadRequestBody(x any) error {
	err := c.ServerCodec.ReadRequestBody(x)
	if err != nil && !errors.Is(err, wire.ErrMalformed) && !errors.Is(err, wire.ErrTooManyOps) {
		c.bad(err) // the codec closed the connection
	}
	return err
}

func (c *loggedCodec) bad(err error) {
	c.s.stats.BadConns.Add(1)
	c.s.log.Warn("closing connection", "remote", c.remote, "err", err)
}

// peekedConn is a connection some of whose bytes sit in a bufio.Reader.
type peekedConn struct {
	net.Conn
	r    *bufio.Reader
	once sync.Once
	done func()
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (c *peekedConn) Close() error {
	c.once.Do(c.done)
	return c.Conn.Close()
}

// chanListener is a net.Listener fed by the server's accept loop, so that
// an http.Server can serve the connections that turned out to be HTTP.
type chanListener struct {
	addr   net.Addr
	ch     chan net.Conn
	mu     sync.Mutex
	closed chan struct{}
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, ch: make(chan net.Conn), closed: make(chan struct{})}
}

// offer hands c to Accept; it returns false if the listener is closed.
func (l *chanListener) offer(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.closed:
		return false
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.closed:
	default:
		close(l.closed)
	}
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }
