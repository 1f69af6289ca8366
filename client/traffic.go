package client

import "sync/atomic"

// Traffic is what a client has sent and received over all its connections,
// in bytes, as TCP carried them (frames, headers and handshakes included),
// and how many ops it had to resend.
type Traffic struct {
	Received uint64
	Sent     uint64
	// Resent counts the ops of replicated batches that had to be sent
	// again: redirected (not the leader, the shard moved) or retried
	// after a failed attempt. Each op counts once however often it was
	// resent.
	Resent uint64
}

// traffic counts bytes for Traffic, through a netcount.Conn around every
// connection.
type traffic struct {
	rx, tx, resent atomic.Uint64
}

// Traffic returns the bytes received and sent so far.
func (c *Client) Traffic() Traffic {
	return Traffic{Received: c.traffic.rx.Load(), Sent: c.traffic.tx.Load(), Resent: c.traffic.resent.Load()}
}
