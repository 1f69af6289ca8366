// Package netcount counts the bytes that cross network connections.
package netcount

import (
	"net"
	"sync/atomic"
)

// Conn is a net.Conn that adds the bytes it reads to In and the bytes it
// writes to Out. The counts are added once per Read or Write call, which
// moves a frame or a buffer-full, not per op; many Conns may share the
// same counters.
type Conn struct {
	net.Conn
	In, Out *atomic.Uint64
}

// Read implements net.Conn.
func (c *Conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.In.Add(uint64(n))
	return n, err
}

// Write implements net.Conn.
func (c *Conn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.Out.Add(uint64(n))
	return n, err
}
