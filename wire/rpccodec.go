package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"time"
	"unsafe"
)

// Preamble opens every connection that speaks the binary codec. A server
// that shares its port with HTTP tells the two apart by these bytes.
const Preamble = "BATCHKV1"

// Framing of the binary codec. Every frame starts with its length (u32,
// bytes after the length field), then:
//
//	request:  seq u64 | method u8 | body
//	response: seq u64 | errLen u32 | err | body (only when errLen is 0)
const (
	reqHeaderBytes  = 8 + 1
	respHeaderBytes = 8 + 4
)

// Method numbers of the binary codec. net/rpc names methods by string; the
// codec sends a byte instead.
const (
	methodBatchOp = 1
)

// BatchOpMethod is the net/rpc name of the batch RPC.
const BatchOpMethod = "KVService.BatchOp"

func methodName(id byte) string {
	if id == methodBatchOp {
		return BatchOpMethod
	}
	return fmt.Sprintf("KVService.unknown%d", id)
}

// ErrFrameTooLarge is returned (wrapped) for a frame over MaxFrameBytes.
var ErrFrameTooLarge = errors.New("wire: frame too large")

// ServerCodec is an rpc.ServerCodec for the binary protocol. net/rpc calls
// ReadRequestHeader and ReadRequestBody from one goroutine and
// WriteResponse under its own sending lock, which is what makes the reused
// frame buffer below safe. Each request body is read into a buffer of its
// own, which its decoded keys and values alias: nothing writes to it once
// it is read, so they need no copy.
type ServerCodec struct {
	conn         net.Conn
	r            *bufio.Reader
	w            *bufio.Writer
	frameTimeout time.Duration
	timed        bool // the frame being read has a read deadline

	bodyLen int    // body bytes of the frame whose header was just read
	out     []byte // reused frame buffer; write side only
}

// NewServerCodec returns a codec over conn, whose preamble has already been
// consumed. r, if not nil, is a reader over conn holding bytes already read
// from it. Once the first byte of a frame arrives the rest must arrive
// within frameTimeout, or the connection is closed; zero means no limit.
func NewServerCodec(conn net.Conn, r *bufio.Reader, frameTimeout time.Duration) *ServerCodec {
	if r == nil {
		r = bufio.NewReaderSize(conn, 64<<10)
	}
	return &ServerCodec{conn: conn, r: r, w: bufio.NewWriterSize(conn, 64<<10), frameTimeout: frameTimeout}
}

// ReadRequestHeader implements rpc.ServerCodec.
func (c *ServerCodec) ReadRequestHeader(req *rpc.Request) error {
	// Wait for a frame without a deadline: an idle connection is fine.
	if _, err := c.r.Peek(1); err != nil {
		return err
	}
	// A frame already read whole cannot stall: only one still arriving
	// gets the deadline (setting and clearing it costs two runtime timer
	// changes per request).
	c.timed = c.frameTimeout > 0 && !frameBuffered(c.r)
	if c.timed {
		if err := c.conn.SetReadDeadline(time.Now().Add(c.frameTimeout)); err != nil {
			return err
		}
	}
	var hdr [4 + reqHeaderBytes]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return fmt.Errorf("wire: reading request header: %w", err)
	}
	n := binary.LittleEndian.Uint32(hdr[:4])
	if n < reqHeaderBytes {
		return fmt.Errorf("%w: frame length %d shorter than its header", ErrMalformed, n)
	}
	if n-reqHeaderBytes > MaxFrameBytes {
		// Not worth reading: a client of ours checks before it sends.
		return fmt.Errorf("%w: request of %d bytes, limit %d", ErrFrameTooLarge, n-reqHeaderBytes, MaxFrameBytes)
	}
	req.Seq = binary.LittleEndian.Uint64(hdr[4:12])
	req.ServiceMethod = methodName(hdr[12])
	c.bodyLen = int(n - reqHeaderBytes)
	return nil
}

// ReadRequestBody implements rpc.ServerCodec. A body that does not decode
// was still consumed whole, so the stream stays in step and the error goes
// back to the caller of that request only. A body that does not arrive (the
// connection broke, or stalled past the frame timeout) leaves the stream out
// of step, and net/rpc would go on reading it, so the codec closes the
// connection itself.
func (c *ServerCodec) ReadRequestBody(x any) error {
	defer c.clearDeadline()
	if x == nil { // net/rpc found no such method: skip the body
		if _, err := io.CopyN(io.Discard, c.r, int64(c.bodyLen)); err != nil {
			_ = c.conn.Close()
			return fmt.Errorf("wire: discarding request body: %w", err)
		}
		return nil
	}
	body, err := readBody(c.r, c.bodyLen)
	if err != nil {
		_ = c.conn.Close()
		return err
	}
	args, ok := x.(*BatchArgs)
	if !ok {
		return fmt.Errorf("wire: binary codec cannot decode %T", x)
	}
	return DecodeBatchArgsAliasing(body, args)
}

func (c *ServerCodec) clearDeadline() {
	if c.timed {
		_ = c.conn.SetReadDeadline(time.Time{})
		c.timed = false
	}
}

// frameBuffered reports whether r holds the whole of the next frame: its
// length, its header (even when the length claims less: that frame is
// refused once its header is read), and its body.
func frameBuffered(r *bufio.Reader) bool {
	if r.Buffered() < 4 {
		return false
	}
	head, _ := r.Peek(4)
	n := max(uint64(binary.LittleEndian.Uint32(head)), reqHeaderBytes)
	return 4+n <= uint64(r.Buffered())
}

// WriteResponse implements rpc.ServerCodec.
func (c *ServerCodec) WriteResponse(resp *rpc.Response, x any) error {
	rep, _ := x.(*BatchReply)
	errMsg := resp.Error
	if errMsg != "" {
		rep = nil
	}
	body := 0
	if rep != nil {
		body = batchReplyLen(rep)
	}
	if respHeaderBytes+len(errMsg)+body > MaxFrameBytes {
		errMsg = fmt.Sprintf("wire: reply of %d bytes over the %d-byte limit", respHeaderBytes+len(errMsg)+body, MaxFrameBytes)
		rep, body = nil, 0
	}
	out := binary.LittleEndian.AppendUint32(c.out[:0], uint32(respHeaderBytes+len(errMsg)+body))
	out = binary.LittleEndian.AppendUint64(out, resp.Seq)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(errMsg)))
	out = append(out, errMsg...)
	var err error
	switch {
	case rep != nil && body <= wholeReply:
		out = AppendBatchReply(out, rep)
	case rep != nil:
		out, err = c.writeResults(appendBatchReplyHead(out, rep), rep.Results)
	}
	c.out = keepSmall(out[:0])
	if err == nil {
		_, err = c.w.Write(out)
	}
	if err != nil {
		return err
	}
	return c.w.Flush()
}

// Reply encoding: a large reply is not copied whole into one buffer,
// which would hold a second copy of its values (up to a frame, 64 MiB) for
// as long as its write waits on a peer that does not read; it is written
// piece by piece.
const (
	// wholeReply is the largest reply encoded whole before it is written
	// (the standard load's 8,192 gets of 128-byte values take 1.1 MiB): a
	// connection holds at most this much beside the values, and the
	// codec keeps a buffer this large for the next reply.
	wholeReply = 4 << 20
	// replyPiece is how much encoding accumulates before it is written:
	// one write of the connection (kvs writes at most 256 KiB at once).
	replyPiece = 256 << 10
	// directValue is the size from which a value is written from where
	// it lies rather than copied into the encoding.
	directValue = 16 << 10
)

// writeResults encodes results after out, writing out whenever it holds a
// piece and a large value straight from where it lies; it returns what is
// left to write.
func (c *ServerCodec) writeResults(out []byte, results []Result) ([]byte, error) {
	for i := range results {
		res := &results[i]
		out = append(out, byte(res.Status))
		out = binary.AppendUvarint(out, uint64(len(res.Value)))
		if len(res.Value) < directValue {
			out = append(out, res.Value...)
		}
		if len(res.Value) >= directValue || len(out) >= replyPiece {
			if _, err := c.w.Write(out); err != nil {
				return out[:0], err
			}
			out = out[:0]
		}
		if len(res.Value) >= directValue {
			if _, err := c.w.Write(unsafe.Slice(unsafe.StringData(res.Value), len(res.Value))); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// Close implements rpc.ServerCodec.
func (c *ServerCodec) Close() error { return c.conn.Close() }

// ClientCodec is an rpc.ClientCodec for the binary protocol. Each reply
// body is read into a buffer of its own, which the reply's values alias.
type ClientCodec struct {
	conn    net.Conn
	r       *bufio.Reader
	w       *bufio.Writer
	bodyLen int
	hdr     [4 + respHeaderBytes]byte // read side only: one reader at a time
	out     []byte                    // write side only (net/rpc writes under its lock)
}

// NewClientCodec writes the preamble to conn and returns a codec over it.
func NewClientCodec(conn net.Conn) (*ClientCodec, error) {
	if _, err := io.WriteString(conn, Preamble); err != nil {
		return nil, fmt.Errorf("wire: writing preamble: %w", err)
	}
	return &ClientCodec{conn: conn, r: bufio.NewReaderSize(conn, 64<<10), w: bufio.NewWriterSize(conn, 64<<10)}, nil
}

// WriteRequest implements rpc.ClientCodec.
func (c *ClientCodec) WriteRequest(req *rpc.Request, x any) error {
	if req.ServiceMethod != BatchOpMethod {
		return fmt.Errorf("wire: binary codec has no method %q", req.ServiceMethod)
	}
	args, ok := x.(*BatchArgs)
	if !ok {
		return fmt.Errorf("wire: binary codec cannot encode %T", x)
	}
	out := append(c.out[:0], 0, 0, 0, 0)
	out = binary.LittleEndian.AppendUint64(out, req.Seq)
	out = append(out, methodBatchOp)
	out = AppendBatchArgs(out, args)
	if len(out)-4-reqHeaderBytes > MaxFrameBytes {
		return fmt.Errorf("%w: request of %d bytes, limit %d", ErrFrameTooLarge, len(out)-4-reqHeaderBytes, MaxFrameBytes)
	}
	binary.LittleEndian.PutUint32(out[:4], uint32(len(out)-4))
	c.out = keepSmall(out)
	if _, err := c.w.Write(out); err != nil {
		return err
	}
	return c.w.Flush()
}

// Await waits until a reply has begun to arrive, or the read fails (a
// read deadline: then the stream is as it was, and reading may go on).
func (c *ClientCodec) Await() error {
	_, err := c.r.Peek(1)
	return err
}

// ReadResponseHeader implements rpc.ClientCodec.
func (c *ClientCodec) ReadResponseHeader(resp *rpc.Response) error {
	hdr := &c.hdr // a local array escapes through io.ReadFull: one allocation a reply
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return err
	}
	n := binary.LittleEndian.Uint32(hdr[:4])
	errLen := binary.LittleEndian.Uint32(hdr[12:16])
	if n < respHeaderBytes || uint64(n)-respHeaderBytes < uint64(errLen) || n-respHeaderBytes > MaxFrameBytes {
		return fmt.Errorf("%w: response frame length %d, error length %d", ErrMalformed, n, errLen)
	}
	resp.Seq = binary.LittleEndian.Uint64(hdr[4:12])
	resp.Error = ""
	if errLen > 0 {
		msg, err := readBody(c.r, int(errLen))
		if err != nil {
			return err
		}
		resp.Error = string(msg)
	}
	c.bodyLen = int(n - respHeaderBytes - errLen)
	return nil
}

// ReadResponseBody implements rpc.ClientCodec.
func (c *ClientCodec) ReadResponseBody(x any) error {
	if x == nil {
		_, err := io.CopyN(io.Discard, c.r, int64(c.bodyLen))
		return err
	}
	body, err := readBody(c.r, c.bodyLen)
	if err != nil {
		return err
	}
	rep, ok := x.(*BatchReply)
	if !ok {
		return fmt.Errorf("wire: binary codec cannot decode %T", x)
	}
	return DecodeBatchReplyAliasing(body, rep)
}

// Close implements rpc.ClientCodec.
func (c *ClientCodec) Close() error { return c.conn.Close() }

// readBody reads n bytes into a new buffer. It grows the buffer only as
// bytes arrive, so a frame that announces a large length and then stalls
// costs no more memory than it actually sent.
func readBody(r io.Reader, n int) ([]byte, error) {
	const step = 1 << 20
	var buf []byte
	for len(buf) < n {
		want := min(n, len(buf)+max(step, len(buf)))
		if cap(buf) < want {
			grown := make([]byte, len(buf), want)
			copy(grown, buf)
			buf = grown
		}
		m, err := io.ReadFull(r, buf[len(buf):want])
		buf = buf[:len(buf)+m]
		if err != nil {
			return buf, fmt.Errorf("wire: reading %d-byte body: %w", n, err)
		}
	}
	return buf, nil
}

// keepSmall returns buf for reuse unless it grew past what is worth keeping
// for the life of a connection.
func keepSmall(buf []byte) []byte {
	if cap(buf) > 8<<20 {
		return nil
	}
	return buf
}
