package respserver

import (
	"errors"
	"io"
	"net"
	"time"

	"github.com/batchkv/batchkv/resp"
	"github.com/batchkv/batchkv/wire"
)

// A RESP connection (commands.go has the commands that touch keys,
// control.go the others). A Redis client's
// connection is read into one buffer; every complete command in it is
// parsed in place (package resp), and the commands that touch keys become
// the ops of one batch, which the backend serves as it serves a BatchOp
// (split by shard or owner, forwarded, replicated). The replies of all the
// buffer's commands, those answered without the store (PING, HELLO...)
// included, are then written in order with one write. So a pipeline of
// 256 GETs is one batch of 256 ops, and MGET and MSET are one batch each.
//
// Per-connection order holds (the next buffer is read only once the
// replies are written); a pipeline is not a transaction: each op applies
// on its own, as in a BatchOp.
//
// The limits that bound other connections bound these: the accept loop's
// connection caps, the idle reaper (the connection counts a request in
// flight while its batch is served), the write timeout of every write,
// and the reply budget (a batch's values are charged to it until its
// replies are written): the server keeps them, through the Link it
// gives each connection. A command is at most respLimits: its bulk strings
// at most a value (wire.MaxValueBytes), its arguments at most an MSET of a
// full batch, its bytes at most a binary frame (wire.MaxFrameBytes); the
// read buffer holds at most one command beyond the complete ones, grows
// only as that command's bytes arrive (see fill), and a command that
// stalls half-way is closed after Config.FrameTimeout. Bytes
// that are not RESP, or break a limit, get an error reply and the
// connection is closed, since the stream cannot be resynchronized.

// respLimits bound one RESP command.
var respLimits = resp.Limits{
	MaxArgs:    2*wire.MaxBatchOps + 1,
	MaxBulk:    wire.MaxValueBytes,
	MaxCommand: wire.MaxFrameBytes,
	MaxInline:  64 << 10,
}

const (
	// respReadBuf is a connection's read buffer to start with, and what a
	// buffer grown for a large command shrinks back to once empty.
	respReadBuf = 64 << 10
	// respKeepOut is the largest reply buffer kept between batches.
	respKeepOut = 1 << 20
	// respLinger bounds how long, and how many bytes, a connection closed
	// on a protocol error is drained for, so that its client reads the
	// error rather than a reset.
	respLinger      = time.Second
	respLingerBytes = 4 << 20
)

// respConn is one RESP connection's state. Its goroutine alone uses it.
type respConn struct {
	srv   *Server
	link  Link
	raw   net.Conn // the TCP connection: deadlines, addresses
	conn  net.Conn // raw, or TLS over it
	id    int64
	proto int    // resp.RESP2 or resp.RESP3, set by HELLO
	name  string // set by CLIENT SETNAME or HELLO SETNAME
	quit  bool   // QUIT seen: close once its reply is written

	in       []byte // read buffer; in[pos:] is not parsed yet
	pos      int
	deadline bool // a read deadline is set (a command is half-read)
	args     [][]byte

	ops  []wire.Op // the batch being gathered
	cmds []respCmd // its commands, in order
	imm  []byte    // replies of commands answered without the store
	out  []byte    // the replies being written
	rep  wire.BatchReply
}

// respCmd is one command of a batch, and how to reply to it.
type respCmd struct {
	kind  respKind
	proto int // the protocol version its reply is written in
	// first and n are its ops in the batch, or for respImmediate its reply
	// in imm.
	first, n int
}

type respKind uint8

const (
	respImmediate respKind = iota // answered already, in imm
	respGet                       // one get: a bulk string or null
	respSet                       // puts: +OK
	respSetCond                   // a put-if: +OK if written, else null
	respSetGet                    // a put-if: the value it replaced, or null
	respSetNX                     // a put-if: 1 if written, else 0
	respMGet                      // gets: an array of bulk strings or nulls
	respDel                       // pairs of get and delete: how many gets found their key
	respExists                    // gets: how many found their key
)

// Serve serves a RESP connection until it ends: conn is the connection
// past TLS, raw the TCP connection under it (its deadlines and
// addresses), prefix the bytes the server read to tell its protocol, and
// link the server's side of it. The caller closes the connection after.
func (s *Server) Serve(conn, raw net.Conn, prefix []byte, link Link) {
	c := &respConn{srv: s, link: link, raw: raw, conn: conn, id: s.ids.Add(1), proto: resp.RESP2,
		in: append(make([]byte, 0, respReadBuf), prefix...)}
	for {
		need, err := c.parse()
		if len(c.cmds) > 0 && !c.flush() {
			return
		}
		if err != nil {
			c.refuse(err)
			return
		}
		if c.quit || !c.fill(need) {
			return
		}
	}
}

// parse turns the buffer's complete commands into the batch. It returns
// the bytes the next command needs once the buffer ends inside one, or
// the protocol error that ends the connection (after the commands before
// it are answered).
func (c *respConn) parse() (int, error) {
	for c.pos < len(c.in) && !c.quit {
		args, n, err := resp.ParseCommand(c.in[c.pos:], c.args[:0], respLimits)
		c.args = args
		if errors.Is(err, resp.ErrIncomplete) {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
		c.pos += n
		if len(args) > 0 {
			c.command(args)
		}
	}
	return 0, nil
}

// fill reads more bytes. When the command being read needs more than the
// buffer holds, the buffer grows once it is full, to at most twice its
// size: it grows as bytes arrive, never to what a header announces, so a
// client that announces a large value and stalls costs the server about
// what it sent. It reports whether the connection is still open.
func (c *respConn) fill(need int) bool {
	rest := copy(c.in[:cap(c.in)], c.in[c.pos:])
	c.in, c.pos = c.in[:rest], 0
	switch {
	case need > cap(c.in) && rest == cap(c.in):
		grown := make([]byte, rest, min(need, 2*cap(c.in)))
		copy(grown, c.in)
		c.in = grown
	case rest == 0 && cap(c.in) > respReadBuf:
		c.in = make([]byte, 0, respReadBuf)
	}
	// A half-read command must arrive within FrameTimeout; between
	// commands, the idle reaper decides.
	if half := rest > 0; half != c.deadline {
		c.deadline = half
		var at time.Time
		if half {
			at = time.Now().Add(c.srv.cfg.FrameTimeout)
		}
		_ = c.raw.SetReadDeadline(at)
	}
	n, err := c.conn.Read(c.in[rest:cap(c.in)])
	c.in = c.in[:rest+n]
	if err != nil && n == 0 {
		if c.deadline && !errors.Is(err, io.EOF) {
			c.srv.cfg.Logger.Warn("closing RESP connection", "remote", c.raw.RemoteAddr(), "err", err)
			c.link.BadConn()
		}
		return false
	}
	return true
}

// flush serves the batch and writes the replies of its commands. It
// reports whether the write succeeded.
func (c *respConn) flush() bool {
	c.link.Begin()
	c.rep = wire.BatchReply{Status: wire.StatusOK}
	if len(c.ops) > 0 {
		c.link.Batch(&wire.BatchArgs{Ops: c.ops}, &c.rep)
	}
	c.out = c.out[:0]
	for _, cmd := range c.cmds {
		c.out = c.reply(c.out, cmd)
	}
	_, err := c.conn.Write(c.out)
	c.link.End(len(c.ops) > 0)
	clear(c.ops) // let the keys and values go
	c.ops, c.cmds, c.imm, c.rep = c.ops[:0], c.cmds[:0], c.imm[:0], wire.BatchReply{}
	if cap(c.out) > respKeepOut {
		c.out = nil
	}
	return err == nil
}

// refuse answers a protocol error and closes the connection, draining
// what the client still sends for a moment so that it reads the error
// rather than a connection reset.
func (c *respConn) refuse(err error) {
	c.link.BadConn()
	c.srv.cfg.Logger.Warn("closing RESP connection", "remote", c.raw.RemoteAddr(), "err", err)
	if _, werr := c.conn.Write(resp.AppendError(nil, "ERR "+err.Error())); werr != nil {
		return
	}
	if tc, ok := c.raw.(*net.TCPConn); ok && !c.srv.cfg.TLS {
		_ = tc.CloseWrite()
	}
	_ = c.raw.SetReadDeadline(time.Now().Add(respLinger))
	_, _ = io.CopyN(io.Discard, c.conn, respLingerBytes)
}

// immediate records a command answered without the store: its reply is
// what appendReply appends.
func (c *respConn) immediate(appendReply func([]byte) []byte) {
	start := len(c.imm)
	c.imm = appendReply(c.imm)
	c.cmds = append(c.cmds, respCmd{kind: respImmediate, first: start, n: len(c.imm) - start})
}

// fail records an error reply.
func (c *respConn) fail(msg string) {
	c.immediate(func(b []byte) []byte { return resp.AppendError(b, msg) })
}

// addOps records a command whose ops are ops, flushing the batch first
// when they would take it past wire.MaxBatchOps.
func (c *respConn) addOps(kind respKind, n int) (ops []wire.Op) {
	if len(c.ops)+n > wire.MaxBatchOps {
		c.flushOrQuit()
	}
	first := len(c.ops)
	c.ops = append(c.ops, make([]wire.Op, n)...)
	c.cmds = append(c.cmds, respCmd{kind: kind, proto: c.proto, first: first, n: n})
	return c.ops[first:]
}

// flushOrQuit flushes the batch gathered so far in the middle of a
// buffer; a failed write ends the connection at the next check.
func (c *respConn) flushOrQuit() {
	if !c.flush() {
		c.quit = true
	}
}
