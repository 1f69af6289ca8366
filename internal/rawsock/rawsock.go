// Package rawsock makes a TCP connection's small reads and writes plain
// read(2) and write(2) calls, made without the Go runtime's bookkeeping
// for a system call that may block.
//
// The runtime enters every system call through entersyscall, which wakes
// its monitor thread (sysmon) when that thread has gone to sleep because
// every P was idle. A process that serves, or makes, one request at a
// time is idle between requests, so each request wakes sysmon, which then
// polls every 20 µs until the process is idle again: on the 2-core VM
// where this was measured, two or three context switches per request on
// each side, and about 5 µs of a 24 µs round trip when client and server
// share a core (docs/results.md, "Lone ops").
//
// A read or write on a non-blocking socket never blocks, so it needs none
// of that bookkeeping. Transfers of at most SmallBytes are made directly;
// larger ones take the runtime's own path, which lets another thread run
// the goroutines of a P whose thread is busy copying. Readiness, deadlines
// and Close work as on the wrapped connection: the waiting is still done
// by the runtime's network poller (syscall.RawConn), after a poll of the
// socket for as long as SetReadSpin allows (none by default).
package rawsock

import (
	"net"
	"time"
)

// SmallBytes is the largest read or write made as a direct system call.
const SmallBytes = 64 << 10

// Wrap returns c with its small reads and writes made directly, when c is
// a *net.TCPConn on a platform where that is done (Linux); else c itself.
// The result is a *Conn or c; its methods other than Read and Write are
// c's.
func Wrap(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	return wrapTCP(tc)
}

// ReadSpinner is a connection whose Reads can poll for data for a while
// before they wait (SetReadSpin): a *Conn, on Linux.
type ReadSpinner interface {
	SetReadSpin(d time.Duration)
}
