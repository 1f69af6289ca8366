package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/busypoll"
	"github.com/batchkv/batchkv/internal/netcount"
	"github.com/batchkv/batchkv/internal/rawsock"
	"github.com/batchkv/batchkv/resp"
	"github.com/batchkv/batchkv/wire"
)

// batchClient sends batches of ops: the client library over batchkv's own
// protocol, or respClient over RESP.
type batchClient interface {
	Do(ctx context.Context, ops []wire.Op) ([]wire.Result, error)
	DoInto(ctx context.Context, ops []wire.Op, results []wire.Result) error
	Traffic() client.Traffic
	Close() error
}

// respClient sends each batch as one pipeline of GET, SET and DEL commands
// on a connection of its own to one of its hosts, so that any Redis
// server (a batchkv server forwards what it does not own) runs the same
// load. A connection serves one batch at a time; a goroutine that finds
// none idle opens one, so there are as many as batches in flight.
type respClient struct {
	hosts    []string
	tls      *tls.Config
	next     atomic.Uint64 // round robin over hosts for new connections
	in, out  atomic.Uint64 // bytes received and sent
	mu       sync.Mutex
	idle     []*respConn // guarded by mu
	closed   bool        // guarded by mu
	dialTime time.Duration
	// lonePoll, when set, lets a pipeline of at most client.LoneOps
	// commands poll for its replies, as the client library's lone calls
	// do (client.Config.LonePoll), so that -sync-redis times Redis with
	// the same waiting as batchkv. Set before the first call. Unlike the
	// library it does not look for other calls in flight: -sync-redis
	// makes one at a time.
	lonePoll *busypoll.Policy
}

type respConn struct {
	conn net.Conn
	w    *bufio.Writer
	r    *resp.Reader
	buf  []byte
	spin rawsock.ReadSpinner // the socket, if it can poll and lonePoll is set
	poll *busypoll.Policy
}

// respReplyLimits bound the replies a respClient accepts.
var respReplyLimits = resp.Limits{MaxArgs: wire.MaxBatchOps, MaxBulk: wire.MaxValueBytes}

func newRESPClient(hosts []string, tlsCfg *tls.Config) *respClient {
	return &respClient{hosts: hosts, tls: tlsCfg, dialTime: 5 * time.Second}
}

func (c *respClient) get(ctx context.Context) (*respConn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, client.ErrClosed
	}
	if n := len(c.idle); n > 0 {
		rc := c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		return rc, nil
	}
	c.mu.Unlock()
	host := c.hosts[c.next.Add(1)%uint64(len(c.hosts))]
	d := net.Dialer{Timeout: c.dialTime}
	raw, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	// The same socket I/O as the client library's (internal/rawsock), so
	// that -sync-redis times Redis and batchkv through the same path.
	sock := rawsock.Wrap(raw)
	var conn net.Conn = &netcount.Conn{Conn: sock, In: &c.in, Out: &c.out}
	rc := &respConn{}
	if c.tls != nil {
		tc := tls.Client(conn, c.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = raw.Close()
			return nil, err
		}
		conn = tc
	} else if sp, ok := sock.(rawsock.ReadSpinner); ok && c.lonePoll != nil {
		rc.spin, rc.poll = sp, c.lonePoll
	}
	rc.conn, rc.w, rc.r = conn, bufio.NewWriterSize(conn, 64<<10), resp.NewReader(conn, respReplyLimits)
	return rc, nil
}

func (c *respClient) put(rc *respConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		_ = rc.conn.Close()
		return
	}
	c.idle = append(c.idle, rc)
}

// Do sends ops as one pipeline and returns their results.
func (c *respClient) Do(ctx context.Context, ops []wire.Op) ([]wire.Result, error) {
	results := make([]wire.Result, len(ops))
	return results, c.DoInto(ctx, ops, results)
}

// DoInto sends ops as one pipeline and writes their results. On an error
// the ops not answered are marked StatusUnavail (gets) or StatusUnknown
// (writes), as the client library does.
func (c *respClient) DoInto(ctx context.Context, ops []wire.Op, results []wire.Result) error {
	rc, err := c.get(ctx)
	if err == nil {
		if err = rc.pipeline(ctx, ops, results); err == nil {
			c.put(rc)
			return nil
		}
		_ = rc.conn.Close()
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		// The connection's deadline is the context's, and may pass a
		// moment before the context says so: wait for it, so that the
		// caller sees the context ended rather than a failure.
		<-ctx.Done()
	}
	for i := range ops {
		if results[i].Status = wire.StatusUnknown; ops[i].Code == wire.OpGet {
			results[i].Status = wire.StatusUnavail
		}
	}
	return fmt.Errorf("%w: %w", client.ErrUnavailable, err)
}

func (rc *respConn) pipeline(ctx context.Context, ops []wire.Op, results []wire.Result) (err error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Minute)
	}
	_ = rc.conn.SetDeadline(deadline)
	if rc.poll != nil && len(ops) <= client.LoneOps {
		spin, start := rc.poll.Choose(), time.Now()
		rc.spin.SetReadSpin(spin)
		defer rc.spin.SetReadSpin(0)
		defer func() {
			if err == nil {
				rc.poll.Observe(spin, time.Since(start))
			}
		}()
	}
	for i := range ops {
		rc.buf = appendOp(rc.buf[:0], &ops[i])
		if _, err := rc.w.Write(rc.buf); err != nil {
			return err
		}
	}
	if err := rc.w.Flush(); err != nil {
		return err
	}
	for i := range ops {
		v, err := rc.r.Read()
		if err != nil {
			return err
		}
		switch {
		case v.Kind == '-':
			return fmt.Errorf("%s of key %q: %s", ops[i].Code, ops[i].Key, v.Str)
		case ops[i].Code != wire.OpGet:
			results[i] = wire.Result{Status: wire.StatusOK}
		case v.Kind == '_':
			results[i] = wire.Result{Status: wire.StatusNotFound}
		case v.Kind == '$':
			results[i] = wire.Result{Status: wire.StatusOK, Value: string(v.Str)}
		default:
			return fmt.Errorf("get of key %q: unexpected reply %s", ops[i].Key, v)
		}
	}
	return nil
}

// appendOp appends the command of op.
func appendOp(b []byte, op *wire.Op) []byte {
	switch op.Code {
	case wire.OpGet:
		b = resp.AppendArray(b, 2)
		b = resp.AppendBulkString(b, "GET")
		return resp.AppendBulkString(b, op.Key)
	case wire.OpPut:
		b = resp.AppendArray(b, 3)
		b = resp.AppendBulkString(b, "SET")
		b = resp.AppendBulkString(b, op.Key)
		return resp.AppendBulkString(b, op.Value)
	default:
		b = resp.AppendArray(b, 2)
		b = resp.AppendBulkString(b, "DEL")
		return resp.AppendBulkString(b, op.Key)
	}
}

// Traffic returns the bytes received and sent.
func (c *respClient) Traffic() client.Traffic {
	return client.Traffic{Received: c.in.Load(), Sent: c.out.Load()}
}

// Close closes the idle connections; those in use close when returned.
func (c *respClient) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, rc := range c.idle {
		errs = append(errs, rc.conn.Close())
	}
	c.idle, c.closed = nil, true
	return errors.Join(errs...)
}
