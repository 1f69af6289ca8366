package kvs

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batchkv/batchkv/auth"
	"github.com/batchkv/batchkv/internal/netcount"
	"github.com/batchkv/batchkv/internal/rawsock"
	"github.com/batchkv/batchkv/kvs/backend"
	"github.com/batchkv/batchkv/kvs/replica/transport"
	"github.com/batchkv/batchkv/kvs/sniff"
	"github.com/batchkv/batchkv/wire"
)

// The life of a connection. The accept loop tracks it (connState) and
// hands it to handle, which within Config.HandshakeTimeout completes the
// TLS handshake, when the server has TLS, and reads the (at most 8) bytes
// that name one of the port's four protocols:
//
//   - binary: wire.Preamble, the binary codec, the fast path of the client
//     library;
//   - Raft stream: transport.Preamble, one shard's Raft traffic, accepted
//     only from a node certificate that names one of the shard's
//     replicas' hosts;
//   - RESP, the Redis protocol (package kvs/respserver): an array ('*'),
//     or an inline command (a line, or a word that starts no HTTP request);
//   - HTTP: anything else, for net/rpc with gob (the course skeleton's
//     client and the admin RPCs) or garbage, which gets a 400.
//
// Nothing larger than those 8 bytes is allocated before the protocol is
// known. From then on the reaper closes the connection once it has had no
// request in flight and moved no byte for Limits.IdleTimeout (a Raft
// connection only until it has carried an RPC), every write must finish
// within Limits.WriteTimeout, and while the server is over its reply
// budget a connection whose replies wait unwritten for
// Limits.StallTimeout is closed.

// connState is what the server knows of one open connection.
type connState struct {
	raw  net.Conn
	host string // remote IP address
	// cert is the peer's verified certificate and role its role; nil and ""
	// without TLS. Set by handle before any request is read.
	cert *x509.Certificate
	role auth.Role

	active   atomic.Int64 // unix nanoseconds of the last byte moved
	wrote    atomic.Int64 // unix nanoseconds of the last write that moved a byte
	inflight atomic.Int32 // requests read and not yet answered
	// carried is set once a byte of a Raft RPC has been read on a
	// connection handed to a shard's Raft transport. The reaper spares a
	// Raft connection that has carried an RPC: a
	// peer's pooled connection may idle for minutes, and hashicorp/raft
	// does not retry an RPC whose pooled connection turns out closed (a
	// vote request lost that way delays an election by a whole timeout).
	// One that never carried an RPC is reaped like any other.
	carried atomic.Bool
	// perReply is set once an rpc codec serves the connection: it sets one
	// write deadline per reply, and writes no longer push it forward (a
	// peer reading a byte now and then must not keep a reply alive).
	perReply atomic.Bool
	replies  *backend.Budget // value bytes of its unwritten replies
	requests *backend.Budget // bytes of its requests not yet answered (RequestBytes)
	closed   sync.Once       // untracks it once
}

func (st *connState) touch() { st.active.Store(time.Now().UnixNano()) }

// activityConn records each byte moved on its connState and bounds each
// write by a deadline.
type activityConn struct {
	net.Conn
	st           *connState
	writeTimeout time.Duration
}

func (c *activityConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.st.touch()
	}
	return n, err
}

func (c *activityConn) Write(p []byte) (int, error) {
	if !c.st.perReply.Load() {
		_ = c.Conn.SetWriteDeadline(time.Now().Add(c.writeTimeout))
	}
	// In pieces, so that a large reply to a peer that reads shows progress
	// while it goes out (Limits.StallTimeout closes peers that show none).
	written := 0
	for written < len(p) {
		n, err := c.Conn.Write(p[written:min(len(p), written+writePiece)])
		written += n
		if n > 0 {
			now := time.Now().UnixNano()
			c.st.active.Store(now)
			c.st.wrote.Store(now)
		}
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// writePiece is the most activityConn writes in one call.
const writePiece = 256 << 10

// handle completes a new connection's handshake and hands it to its
// protocol.
func (s *Server) handle(st *connState) {
	var conn net.Conn = &activityConn{Conn: &netcount.Conn{Conn: rawsock.Wrap(st.raw), In: &s.stats.BytesIn, Out: &s.stats.BytesOut},
		st: st, writeTimeout: s.limits.WriteTimeout}
	_ = st.raw.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	if s.serverTLS != nil {
		tc := tls.Server(conn, s.serverTLS)
		if err := tc.Handshake(); err != nil {
			s.refuse(st, "TLS handshake failed", err)
			return
		}
		st.cert = tc.ConnectionState().PeerCertificates[0]
		st.role = auth.RoleOf(st.cert)
		conn = tc
	}
	head, err := sniff.Head(conn)
	_ = st.raw.SetDeadline(time.Time{})
	n := len(head)
	switch {
	case n == 0:
		s.drop(st)
	case err == nil && string(head) == transport.Preamble:
		s.handleRaft(st, conn)
	case err == nil && string(head) == wire.Preamble:
		s.serveCodec(st, wire.NewServerCodec(conn, nil, s.cfg.FrameTimeout))
	case sniff.IsRESP(head):
		s.serveRESP(st, conn, head)
	default:
		// HTTP (the skeleton's net/rpc transport) or garbage, which the
		// HTTP server answers with 400 and closes.
		pc := &httpConn{PrefixConn: sniff.PrefixConn{Conn: conn, Prefix: head[:n], OnClose: func() { s.drop(st) }}, st: st}
		if !s.httpLn.Offer(pc) {
			_ = pc.Close()
		}
	}
}

// handleRaft hands a Raft connection to its shard, or closes it with one
// log line.
func (s *Server) handleRaft(st *connState, conn net.Conn) {
	rb, ok := s.svc.backend.(*backend.Replicated)
	if !ok {
		s.refuse(st, "raft connection to a server that is not replicated", nil)
		return
	}
	_ = st.raw.SetReadDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	sh, err := transport.ReadShard(conn)
	_ = st.raw.SetReadDeadline(time.Time{})
	if err == nil && s.serverTLS != nil {
		err = auth.CheckRaftPeer(st.cert, rb.Set().Replicas(sh))
	}
	if err == nil {
		// A byte read means the connection carried an RPC.
		carried := func() { st.carried.Store(true) }
		err = rb.Set().Accept(&sniff.PrefixConn{Conn: conn, OnRead: carried, OnClose: func() { s.drop(st) }}, sh)
	}
	if err != nil {
		s.refuse(st, "refusing raft connection", err)
	}
}

// refuse logs why a connection is closed and closes it.
func (s *Server) refuse(st *connState, why string, err error) {
	s.stats.BadConns.Add(1)
	args := []any{"remote", st.raw.RemoteAddr()}
	if st.cert != nil {
		args = append(args, "cert", st.cert.Subject.CommonName, "role", st.role)
	}
	if err != nil {
		args = append(args, "err", err)
	}
	s.log.Warn(why, args...)
	s.drop(st)
}

// httpConn is a connection offered to the HTTP server, which gob.go finds
// again once net/rpc's CONNECT hijacks it.
type httpConn struct {
	sniff.PrefixConn
	st *connState
}
