// Package handoff provides a net.Listener whose connections are handed to
// it by another goroutine rather than accepted from a socket.
//
// A server that tells protocols apart by a connection's first bytes owns
// the one real listener; once it knows a connection's protocol it offers
// the connection to that protocol's handoff.Listener, whose Accept returns
// it to the protocol's own server (an http.Server, a Raft transport):
//
//	l := handoff.New(ln.Addr())
//	go httpServer.Serve(l)
//	...
//	if !l.Offer(conn) { conn.Close() } // the listener was closed
package handoff

import (
	"net"
	"sync"
)

// Listener is a net.Listener fed by Offer. It is safe for concurrent use.
type Listener struct {
	addr   net.Addr
	conns  chan net.Conn
	once   sync.Once
	closed chan struct{}
}

// New returns a listener that reports addr as its address.
func New(addr net.Addr) *Listener {
	return &Listener{addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
}

// Offer blocks until Accept takes c, and returns true, or until the
// listener is closed, and returns false; then the caller still owns c.
func (l *Listener) Offer(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.closed:
		return false
	}
}

// Accept implements net.Listener: it returns the next offered connection,
// or net.ErrClosed once the listener is closed.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener. It is idempotent; connections offered
// afterwards are refused.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr implements net.Listener.
func (l *Listener) Addr() net.Addr { return l.addr }
