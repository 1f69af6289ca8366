// Package sniff tells the protocols of a batchkv port apart by the bytes
// that open a connection: the binary codec's and the Raft stream's
// preambles, RESP (the Redis protocol), and HTTP for anything else.
package sniff

import (
	"io"
	"net"
	"strings"

	"github.com/batchkv/batchkv/wire"
)

// Len is how many bytes name a protocol: the preambles' length.
const Len = len(wire.Preamble)

// Head reads the bytes that name a connection's protocol: Len bytes, or
// fewer when they are RESP: an array's '*', or an inline command's line
// (redis-cli's "PING\r\n" is shorter than a preamble). It reads one byte
// at a time, so that nothing past them is consumed.
func Head(conn net.Conn) ([]byte, error) {
	head := make([]byte, 0, Len)
	for len(head) < Len {
		n, err := io.ReadFull(conn, head[len(head):len(head)+1])
		head = head[:len(head)+n]
		if err != nil {
			return head, err
		}
		if head[0] == '*' || head[len(head)-1] == '\n' {
			return head, nil
		}
	}
	return head, nil
}

// httpMethods open the HTTP requests the port serves (net/rpc's CONNECT,
// and GET for anything else); an inline RESP command is told from them by
// the '/' or '*' of a request target after the method.
var httpMethods = []string{"CONNECT ", "GET ", "HEAD ", "POST ", "PUT ", "DELETE ", "OPTIONS ", "PATCH ", "TRACE "}

// IsRESP says whether head, which is no preamble, opens a RESP
// connection: an array, a line shorter than a preamble, or a command
// name that is not an HTTP request.
func IsRESP(head []byte) bool {
	switch {
	case head[0] == '*' || head[len(head)-1] == '\n':
		return true
	case !('a' <= head[0] && head[0] <= 'z' || 'A' <= head[0] && head[0] <= 'Z'):
		return false
	}
	for _, m := range httpMethods {
		if rest, ok := strings.CutPrefix(string(head), m); ok && (rest == "" || rest[0] == '/' || rest[0] == '*') {
			return false
		}
	}
	return true
}

// PrefixConn is a connection whose first bytes were already read: Read
// returns Prefix first. OnRead, if set, is called after each read from
// the connection that returned bytes; OnClose, if set, once the
// connection is closed.
type PrefixConn struct {
	net.Conn
	Prefix  []byte
	OnRead  func()
	OnClose func()
}

// Read implements net.Conn.
func (c *PrefixConn) Read(p []byte) (int, error) {
	if len(c.Prefix) > 0 {
		n := copy(p, c.Prefix)
		c.Prefix = c.Prefix[n:]
		return n, nil
	}
	n, err := c.Conn.Read(p)
	if n > 0 && c.OnRead != nil {
		c.OnRead()
	}
	return n, err
}

// Close implements net.Conn.
func (c *PrefixConn) Close() error {
	err := c.Conn.Close()
	if c.OnClose != nil {
		c.OnClose()
	}
	return err
}
