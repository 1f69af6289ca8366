package transport

import (
	"fmt"
	"io"
	"net"
)

// guardedConn is a Raft connection whose reads pass a scanner: bytes that
// break its Limits never reach hashicorp/raft, and the read that holds
// them fails, which makes Raft close the connection.
type guardedConn struct {
	net.Conn
	scan    *scanner
	err     error
	refused func(error) // told of the refusal; nil: none
}

// guard returns c with every message read from it checked against lim:
// requests on a connection the server accepted, answers on one it
// dialled. refused, if not nil, is told of a refusal.
func guard(c net.Conn, lim Limits, requests bool, refused func(error)) net.Conn {
	return &guardedConn{Conn: c, scan: newScanner(lim, requests), refused: refused}
}

// Read implements net.Conn.
func (c *guardedConn) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if c.scan.ended() {
		return 0, io.EOF
	}
	n, err := c.Conn.Read(p)
	m, serr := c.scan.scan(p[:n])
	if serr != nil {
		c.err = fmt.Errorf("from %s: %w", c.RemoteAddr(), serr)
		if c.refused != nil {
			c.refused(c.err)
		}
		return 0, c.err
	}
	if m < n || (c.scan.ended() && err == nil) {
		return m, nil
	}
	return n, err
}
