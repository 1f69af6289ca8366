// Package gobrpc is a net/rpc server codec with gob encoding whose
// messages are bounded in size: what the server's HTTP net/rpc path (the
// course skeleton's client, the admin RPCs) is served with.
package gobrpc

import (
	"bufio"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"net/rpc"
)

// ErrTooLarge says a gob message announced more bytes than the limit, or
// a length that cannot be read, or that a connection's type definitions
// passed theirs.
var ErrTooLarge = errors.New("kvs: gob message over the limit")

// codec is an rpc.ServerCodec with gob encoding whose messages are
// bounded in size.
type codec struct {
	rwc    io.ReadWriteCloser
	dec    *gob.Decoder
	enc    *gob.Encoder
	encBuf *bufio.Writer
	closed bool
}

// NewServerCodec returns a net/rpc server codec with gob encoding over
// rwc that refuses a message announcing more than maxMessage bytes before
// reading, or allocating for, any of it (net/rpc's own gob codec reads
// whatever length a message announces), and a type definition that takes
// the connection's past maxTypes bytes (the decoder keeps them all). A
// refused message ends the connection with an error that wraps
// ErrTooLarge.
func NewServerCodec(rwc io.ReadWriteCloser, maxMessage, maxTypes int) rpc.ServerCodec {
	w := bufio.NewWriter(rwc)
	r := &limitReader{r: bufio.NewReader(rwc), max: uint64(maxMessage), typesLeft: uint64(maxTypes)}
	return &codec{rwc: rwc, dec: gob.NewDecoder(r), enc: gob.NewEncoder(w), encBuf: w}
}

// ReadRequestHeader implements rpc.ServerCodec.
func (c *codec) ReadRequestHeader(r *rpc.Request) error { return c.dec.Decode(r) }

// ReadRequestBody implements rpc.ServerCodec.
func (c *codec) ReadRequestBody(body any) error { return c.dec.Decode(body) }

// WriteResponse implements rpc.ServerCodec.
func (c *codec) WriteResponse(r *rpc.Response, body any) error {
	if err := c.enc.Encode(r); err != nil {
		return c.fail(err)
	}
	if err := c.enc.Encode(body); err != nil {
		return c.fail(err)
	}
	return c.encBuf.Flush()
}

// fail closes the connection after an encoding error: the stream is out
// of step.
func (c *codec) fail(err error) error {
	if c.encBuf.Flush() == nil {
		_ = c.Close()
	}
	return err
}

// Close implements rpc.ServerCodec.
func (c *codec) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	return c.rwc.Close()
}

// limitReader passes a gob stream through, message by message: at each
// message boundary it reads the message's length (gob's unsigned integer
// encoding: one byte below 0x80, else a byte holding minus the count of
// big-endian bytes that follow) and refuses a message over max before the
// decoder sees, and allocates for, any of it. A message that defines a
// type (its type id, the integer after the length, is negative: gob's
// signed integers keep the sign in the low bit) is counted against
// typesLeft.
type limitReader struct {
	r         *bufio.Reader
	max       uint64
	typesLeft uint64 // bytes of type definitions the connection may still send
	left      uint64 // bytes of the current message, its length included, not yet passed on
}

// readUint peeks at gob's unsigned integer that starts off bytes ahead,
// and returns it and its length.
func (l *limitReader) readUint(off int) (v uint64, n int, err error) {
	b, err := l.r.Peek(off + 1)
	if err != nil {
		return 0, 0, err
	}
	if b[off] < 0x80 {
		return uint64(b[off]), 1, nil
	}
	k := -int(int8(b[off]))
	if k < 1 || k > 8 {
		return 0, 0, fmt.Errorf("%w: malformed integer", ErrTooLarge)
	}
	hb, err := l.r.Peek(off + 1 + k)
	if err != nil {
		return 0, 0, err
	}
	for _, x := range hb[off+1:] {
		v = v<<8 | uint64(x)
	}
	return v, 1 + k, nil
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left == 0 {
		count, head, err := l.readUint(0)
		if err != nil {
			return 0, err
		}
		if count > l.max {
			return 0, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, count, l.max)
		}
		if count > 0 {
			id, _, err := l.readUint(head)
			if err != nil {
				return 0, err
			}
			if id&1 == 1 {
				if count > l.typesLeft {
					return 0, fmt.Errorf("%w: type definitions past %d bytes on one connection", ErrTooLarge, l.typesLeft)
				}
				l.typesLeft -= count
			}
		}
		l.left = uint64(head) + count
	}
	if uint64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= uint64(n)
	return n, err
}
