package client

import (
	"net"
	"sync/atomic"
)

// Traffic is what a client has sent and received over all its connections,
// in bytes, as TCP carried them (frames, headers and handshakes included).
type Traffic struct {
	Received uint64
	Sent     uint64
}

// traffic counts bytes for Traffic. It is added to once per read or write
// call on a connection, which moves a buffer-full, not per op.
type traffic struct {
	rx, tx atomic.Uint64
}

// countingConn counts the bytes that cross a connection.
type countingConn struct {
	net.Conn
	t *traffic
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.t.rx.Add(uint64(n))
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.t.tx.Add(uint64(n))
	return n, err
}

// Traffic returns the bytes received and sent so far.
func (c *Client) Traffic() Traffic {
	return Traffic{Received: c.traffic.rx.Load(), Sent: c.traffic.tx.Load()}
}
