package kvs

import (
	"bufio"
	"encoding/gob"
	"fmt"
	"io"
	"net/http"
	"net/rpc"
)

// The HTTP net/rpc path, which the course skeleton's client and the admin
// RPCs speak: an HTTP CONNECT, then gob. net/rpc's own handler would read
// each gob message at whatever length it announces (gob allocates the
// whole message before reading it), so the server serves that path with
// its own gob codec, which checks each length first.

// connectedResponse is what net/rpc's HTTP handshake answers.
const connectedResponse = "HTTP/1.0 200 Connected to Go RPC\n\n"

// serveRPCOverHTTP takes over a CONNECT request's connection and serves
// net/rpc with gob on it.
func (s *Server) serveRPCOverHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodConnect {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusMethodNotAllowed)
		_, _ = io.WriteString(w, "405 must CONNECT\n")
		return
	}
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		s.log.Warn("net/rpc over HTTP: hijack", "remote", req.RemoteAddr, "err", err)
		return
	}
	pc, ok := conn.(*prefixConn)
	if !ok { // every connection the HTTP server serves is one of ours
		_ = conn.Close()
		return
	}
	// Close waits for this connection's calls, as for the binary ones.
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = conn.Close()
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	if _, err := io.WriteString(conn, connectedResponse); err != nil {
		_ = conn.Close()
		return
	}
	s.serveCodec(pc.st, newGobCodec(conn, s.limits.MaxGobMessage))
}

// gobCodec is an rpc.ServerCodec with gob encoding whose messages are
// bounded in size.
type gobCodec struct {
	rwc    io.ReadWriteCloser
	dec    *gob.Decoder
	enc    *gob.Encoder
	encBuf *bufio.Writer
	closed bool
}

func newGobCodec(rwc io.ReadWriteCloser, maxMessage int) *gobCodec {
	w := bufio.NewWriter(rwc)
	r := &gobLimitReader{r: bufio.NewReader(rwc), max: uint64(maxMessage)}
	return &gobCodec{rwc: rwc, dec: gob.NewDecoder(r), enc: gob.NewEncoder(w), encBuf: w}
}

func (c *gobCodec) ReadRequestHeader(r *rpc.Request) error { return c.dec.Decode(r) }

func (c *gobCodec) ReadRequestBody(body any) error { return c.dec.Decode(body) }

func (c *gobCodec) WriteResponse(r *rpc.Response, body any) error {
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
func (c *gobCodec) fail(err error) error {
	if c.encBuf.Flush() == nil {
		_ = c.Close()
	}
	return err
}

func (c *gobCodec) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	return c.rwc.Close()
}

// gobLimitReader passes a gob stream through, message by message: at each
// message boundary it reads the message's length (gob's unsigned integer
// encoding: one byte below 0x80, else a byte holding minus the count of
// big-endian bytes that follow) and refuses a message over max before the
// decoder sees, and allocates for, any of it.
type gobLimitReader struct {
	r    *bufio.Reader
	max  uint64
	left uint64 // bytes of the current message, its length included, not yet passed on
}

func (l *gobLimitReader) Read(p []byte) (int, error) {
	if l.left == 0 {
		b, err := l.r.Peek(1)
		if err != nil {
			return 0, err
		}
		head, count := 1, uint64(b[0])
		if b[0] >= 0x80 {
			k := -int(int8(b[0]))
			if k < 1 || k > 8 {
				return 0, fmt.Errorf("%w: malformed message length", errGobTooLarge)
			}
			hb, err := l.r.Peek(1 + k)
			if err != nil {
				return 0, err
			}
			count = 0
			for _, x := range hb[1:] {
				count = count<<8 | uint64(x)
			}
			head = 1 + k
		}
		if count > l.max {
			return 0, fmt.Errorf("%w: %d bytes, limit %d", errGobTooLarge, count, l.max)
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
