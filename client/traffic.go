package client

import "sync/atomic"

// Traffic is what a client has sent and received over all its connections,
// in bytes, as TCP carried them (frames, headers and handshakes included).
type Traffic struct {
	Received uint64
	Sent     uint64
}

// traffic counts bytes for Traffic, through a netcount.Conn around every
// connection.
type traffic struct {
	rx, tx atomic.Uint64
}

// Traffic returns the bytes received and sent so far.
func (c *Client) Traffic() Traffic {
	return Traffic{Received: c.traffic.rx.Load(), Sent: c.traffic.tx.Load()}
}
