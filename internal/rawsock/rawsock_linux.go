package rawsock

import (
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Conn is a TCP connection whose reads and writes of at most SmallBytes
// are direct system calls. Its other methods are the TCP connection's.
type Conn struct {
	*net.TCPConn
	rc syscall.RawConn

	rmu    sync.Mutex // one Read at a time; guards the read fields
	rbuf   []byte
	rn     int
	rerr   syscall.Errno
	readFn func(fd uintptr) bool // c.readOnce, made once

	spin      atomic.Int64 // nanoseconds a Read that finds no data polls (SetReadSpin)
	spinUntil time.Time    // guarded by rmu: this Read polls until then

	wmu     sync.Mutex // one Write at a time; guards the write fields
	wbuf    []byte
	wn      int
	werr    syscall.Errno
	writeFn func(fd uintptr) bool // c.writeAll, made once
}

func wrapTCP(tc *net.TCPConn) net.Conn {
	rc, err := tc.SyscallConn()
	if err != nil {
		return tc
	}
	c := &Conn{TCPConn: tc, rc: rc}
	c.readFn = c.readOnce
	c.writeFn = c.writeAll
	return c
}

// Read implements net.Conn.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) > SmallBytes {
		return c.TCPConn.Read(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.rbuf, c.rn, c.rerr = p, 0, 0
	c.spinUntil = time.Time{}
	if d := c.spin.Load(); d > 0 {
		c.spinUntil = time.Now().Add(time.Duration(d))
	}
	err := c.rc.Read(c.readFn) // a deadline, or the connection closed
	n, errno := c.rn, c.rerr
	c.rbuf = nil
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, c.opError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// SetReadSpin makes each later Read that finds no data poll the socket
// for up to d before it waits in the runtime's poller, giving way between
// tries to any other goroutine and thread that wants to run; 0 (the
// default) turns that off, and ends a poll under way at its next try.
// Waking a thread that sleeps costs a round trip on a small VM more than
// the server's own work (docs/results.md, "Lone ops"), so a caller that
// expects its reply within microseconds may rather spend the CPU. A
// deadline or Close ends a polling Read at the latest d late.
func (c *Conn) SetReadSpin(d time.Duration) { c.spin.Store(int64(max(d, 0))) }

// readOnce reads once into c.rbuf, polling until c.spinUntil if it finds
// no data; false asks the poller to wait until the socket is readable.
func (c *Conn) readOnce(fd uintptr) bool {
	for {
		n, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&c.rbuf[0])), uintptr(len(c.rbuf)))
		switch errno {
		case 0:
			c.rn = int(n)
			return true
		case syscall.EINTR:
		case syscall.EAGAIN:
			if c.spinUntil.IsZero() {
				return false
			}
			if c.spin.Load() == 0 || time.Now().After(c.spinUntil) {
				// Once per Read: a wake-up of the poller that finds
				// no data waits again at once.
				c.spinUntil = time.Time{}
				return false
			}
			runtime.Gosched()
			syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
		default:
			c.rerr = errno
			return true
		}
	}
}

// Write implements net.Conn: it returns once all of p is written, or with
// the error that stopped it.
func (c *Conn) Write(p []byte) (int, error) {
	if len(p) > SmallBytes {
		return c.TCPConn.Write(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf, c.wn, c.werr = p, 0, 0
	err := c.rc.Write(c.writeFn)
	n, errno := c.wn, c.werr
	c.wbuf = nil
	switch {
	case err != nil:
		return n, err
	case errno != 0:
		return n, c.opError("write", errno)
	}
	return n, nil
}

// writeAll writes what is left of c.wbuf; false asks the poller to wait
// until the socket is writable.
func (c *Conn) writeAll(fd uintptr) bool {
	for c.wn < len(c.wbuf) {
		rest := c.wbuf[c.wn:]
		n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)))
		switch errno {
		case 0:
			c.wn += int(n)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			c.werr = errno
			return true
		}
	}
	return true
}

// opError is the error the net package gives for a failed op.
func (c *Conn) opError(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError(op, errno)}
}
