package kvs

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// RaftPreamble opens a connection that carries one shard's Raft traffic.
// It is followed by the shard number (u32, little endian). Raft shares the
// server's port with the client protocols; the server tells them apart by
// the first bytes.
const RaftPreamble = "BKVRAFT1"

// DialFunc opens a TCP connection to addr within timeout.
type DialFunc func(addr string, timeout time.Duration) (net.Conn, error)

// raftAddr is a net.Addr that is just the server's advertised address,
// which is also its Raft server ID.
type raftAddr string

func (a raftAddr) Network() string { return "tcp" }
func (a raftAddr) String() string  { return string(a) }

// shardStream is the raft.StreamLayer of one shard: it dials peers with the
// preamble and shard number, and accepts the connections that the server's
// accept loop hands it.
type shardStream struct {
	shard  uint32
	self   raftAddr
	dial   DialFunc
	conns  chan net.Conn
	once   sync.Once
	closed chan struct{}
}

func newShardStream(shard int, self string, dial DialFunc) *shardStream {
	return &shardStream{shard: uint32(shard), self: raftAddr(self), dial: dial,
		conns: make(chan net.Conn), closed: make(chan struct{})}
}

// Dial implements raft.StreamLayer.
func (s *shardStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := s.dial(string(addr), timeout)
	if err != nil {
		return nil, err
	}
	hdr := make([]byte, 0, len(RaftPreamble)+4)
	hdr = append(hdr, RaftPreamble...)
	hdr = binary.LittleEndian.AppendUint32(hdr, s.shard)
	_ = c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.Write(hdr); err != nil {
		_ = c.Close()
		return nil, err
	}
	_ = c.SetWriteDeadline(time.Time{})
	return c, nil
}

// offer hands an inbound connection to Accept; false if the stream is
// closed.
func (s *shardStream) offer(c net.Conn) bool {
	select {
	case s.conns <- c:
		return true
	case <-s.closed:
		return false
	}
}

// Accept implements net.Listener.
func (s *shardStream) Accept() (net.Conn, error) {
	select {
	case c := <-s.conns:
		return c, nil
	case <-s.closed:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener.
func (s *shardStream) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

// Addr implements net.Listener: the address peers reach this server at.
func (s *shardStream) Addr() net.Addr { return s.self }

// readRaftShard reads the shard number that follows RaftPreamble, with a
// deadline, from a connection whose preamble has been consumed.
func readRaftShard(c net.Conn, r *bufio.Reader, timeout time.Duration) (int, error) {
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	defer func() { _ = c.SetReadDeadline(time.Time{}) }()
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, fmt.Errorf("raft connection header: %w", err)
	}
	return int(binary.LittleEndian.Uint32(b[:])), nil
}

var errNoSuchShard = errors.New("kvs: this server hosts no replica of that shard")

func defaultDial(addr string, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", addr, timeout)
}
