package transport

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/internal/handoff"
)

// Preamble opens a connection that carries one shard's Raft traffic. It
// is followed by the shard number (u32, little endian). Raft shares the
// server's port with the client protocols; the server tells them apart by
// the first bytes, reads the shard number (ReadShard), and hands the
// connection to that shard's Stream (replica.Set.Accept does).
const Preamble = "BKVRAFT1"

// DialFunc opens a TCP connection to addr within timeout.
type DialFunc func(addr string, timeout time.Duration) (net.Conn, error)

// raftAddr is a net.Addr that is just the server's advertised address,
// which is also its Raft server ID.
type raftAddr string

func (a raftAddr) Network() string { return "tcp" }
func (a raftAddr) String() string  { return string(a) }

// Stream is the raft.StreamLayer of one shard: it dials peers with the
// preamble and shard number, and accepts the connections that the
// server's accept loop hands it (Offer). Its methods are safe for
// concurrent use.
type Stream struct {
	*handoff.Listener
	shard   uint32
	dial    DialFunc
	refused func(error) // nil: none told
	// heard holds, per peer address dialled, when a connection to it
	// last read a byte (unix nanoseconds, an *atomic.Int64): a peer whose
	// answers are lost (a one-way partition) falls silent here before
	// any RPC to it times out.
	heard sync.Map
}

// heardConn is a dialled connection that notes when it reads.
type heardConn struct {
	net.Conn
	at *atomic.Int64
}

func (c heardConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.at.Store(time.Now().UnixNano())
	}
	return n, err
}

// HeardFrom returns when a connection to peer addr last read a byte; ok
// false if none ever has.
func (s *Stream) HeardFrom(addr string) (at time.Time, ok bool) {
	v, found := s.heard.Load(addr)
	if !found {
		return time.Time{}, false
	}
	ns := v.(*atomic.Int64).Load()
	return time.Unix(0, ns), ns > 0
}

// NewStream returns the stream of shard, on the server whose advertised
// address (its Raft server ID) is self; it dials peers with dial.
func NewStream(shard int, self string, dial DialFunc) *Stream {
	return &Stream{Listener: handoff.New(raftAddr(self)), shard: uint32(shard), dial: dial}
}

// OnRefused makes the stream call f with the error of each message it
// refuses (and whose connection Raft then closes). Call it before the
// stream is used.
func (s *Stream) OnRefused(f func(error)) { s.refused = f }

// Accept implements raft.StreamLayer: the next connection offered, its
// requests checked against DefaultLimits.
func (s *Stream) Accept() (net.Conn, error) {
	c, err := s.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return guard(c, DefaultLimits, true, s.refused), nil
}

// Dial implements raft.StreamLayer; the answers read from the connection
// are checked against DefaultLimits.
func (s *Stream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := s.dial(string(addr), timeout)
	if err != nil {
		return nil, err
	}
	hdr := make([]byte, 0, len(Preamble)+4)
	hdr = append(hdr, Preamble...)
	hdr = binary.LittleEndian.AppendUint32(hdr, s.shard)
	_ = c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.Write(hdr); err != nil {
		_ = c.Close()
		return nil, err
	}
	_ = c.SetWriteDeadline(time.Time{})
	v, _ := s.heard.LoadOrStore(string(addr), &atomic.Int64{})
	return guard(heardConn{Conn: c, at: v.(*atomic.Int64)}, DefaultLimits, false, s.refused), nil
}

// ReadShard reads the shard number that follows Preamble from a
// connection whose preamble has been consumed. The caller sets a deadline.
func ReadShard(r io.Reader) (int, error) {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, fmt.Errorf("raft connection header: %w", err)
	}
	return int(binary.LittleEndian.Uint32(b[:])), nil
}

// DialTCP is the DialFunc of plain TCP.
func DialTCP(addr string, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", addr, timeout)
}
