package kvs

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/rpc"
	"sync"
	"time"

	"github.com/batchkv/batchkv/internal/netcount"
	"github.com/batchkv/batchkv/kvs/replica"
	"github.com/batchkv/batchkv/wire"
)

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
	if string(head) == replica.Preamble {
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
	if !s.httpLn.Offer(&peekedConn{Conn: counted, r: br, done: func() { s.untrack(raw) }}) {
		s.untrack(raw)
		_ = raw.Close()
	}
}

// handleRaft hands a Raft connection to its shard, or closes it.
func (s *Server) handleRaft(raw, counted net.Conn, br *bufio.Reader) {
	_, _ = br.Discard(len(replica.Preamble))
	rb, ok := s.svc.backend.(*replicatedBackend)
	if !ok {
		s.log.Warn("raft connection to a server that is not replicated", "remote", raw.RemoteAddr())
		s.untrack(raw)
		_ = raw.Close()
		return
	}
	sh, err := replica.ReadShard(raw, br, s.cfg.HandshakeTimeout)
	if err == nil {
		err = rb.set.Accept(&peekedConn{Conn: counted, r: br, done: func() { s.untrack(raw) }}, sh)
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
