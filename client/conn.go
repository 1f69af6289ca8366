package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/rpc"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/batchkv/batchkv/internal/breaker"
	"github.com/batchkv/batchkv/internal/busypoll"
	"github.com/batchkv/batchkv/internal/rpcconn"
	"github.com/batchkv/batchkv/wire"
)

// serverConn is a small pool of connections to one server. Each
// multiplexes many calls over its TCP connection (muxConn); a few of them
// spread the encoding and decoding over more than one goroutine on each
// side. A connection that breaks is dropped and redialled on next use.
type serverConn struct {
	addr        string
	codec       string
	dialTimeout time.Duration
	tls         *tls.Config
	traffic     *traffic
	health      *breaker.Breaker
	next        atomic.Uint32
	busy        atomic.Int32 // calls in flight over all connections
	lonePoll    *busypoll.Policy
	// window bounds the bytes of replicated requests in flight to the
	// server (replicatedWindow).
	window *semaphore.Weighted

	mu      sync.Mutex
	clients []rpcconn.Conn // guarded by mu; nil slots are dialled on demand
	closed  bool           // guarded by mu
}

func newServerConn(addr string, cfg *Config, t *traffic) *serverConn {
	return &serverConn{
		addr: addr, codec: cfg.Codec, dialTimeout: cfg.DialTimeout, tls: cfg.TLS, traffic: t,
		health:   breaker.New(cfg.FailureThreshold, cfg.Cooldown, cfg.MaxCooldown),
		lonePoll: busypoll.New(cfg.LonePoll),
		clients:  make([]rpcconn.Conn, cfg.ConnsPerServer),
		window:   semaphore.NewWeighted(replicatedWindow),
	}
}

// LoneOps is the most ops a lone call holds (Config.LonePoll): a small
// batch, which the server serves in the goroutine that read it.
const LoneOps = wire.SmallBatchOps

// pick returns the connection for a call: the first when no call is in
// flight, else each in turn. A lone caller so keeps to one connection,
// whose socket and server goroutine stay warm (taking the connections in
// turn cost a lone op 0.5-0.9 µs of 23 on one core), and concurrent
// callers spread over all, as before.
func (s *serverConn) pick() int {
	if s.busy.Load() == 0 {
		return 0
	}
	return int(s.next.Add(1) % uint32(len(s.clients)))
}

// get returns connection i, dialling it if needed.
func (s *serverConn) get(ctx context.Context, i int) (rpcconn.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if c := s.clients[i]; c != nil {
		return c, nil
	}
	c, err := rpcconn.Dial(ctx, s.addr, s.codec, s.dialTimeout, s.tls, &s.traffic.rx, &s.traffic.tx, s.lonePoll)
	if err != nil {
		return nil, err
	}
	s.clients[i] = c
	return c, nil
}

// drop forgets connection i if it is still c, so the next call redials.
func (s *serverConn) drop(i int, c rpcconn.Conn) {
	s.mu.Lock()
	if s.clients[i] == c {
		s.clients[i] = nil
	}
	s.mu.Unlock()
	_ = c.Close()
}

// call sends one batch and waits for its reply or for ctx. reply must not
// be reused after a ctx error: net/rpc may still write into it. A server
// marked unhealthy (package internal/breaker) fails the call at once.
func (s *serverConn) call(ctx context.Context, args *wire.BatchArgs, reply *wire.BatchReply) error {
	probe, err := s.health.Admit()
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, s.addr, err)
	}
	v, err := s.try(ctx, args, reply)
	s.health.Report(probe, v, err)
	return err
}

// callInWindow waits under ctx for room bytes of the server's window
// (replicatedWindow), then calls within the attempt's context, which
// within makes from ctx, so that an attempt's time runs only once the
// request can be sent. sent is false when ctx ended first.
func (s *serverConn) callInWindow(ctx context.Context, room int64, within func(context.Context) (context.Context, context.CancelFunc),
	args *wire.BatchArgs, reply *wire.BatchReply) (sent bool, err error) {
	if err := s.window.Acquire(ctx, room); err != nil {
		return false, err
	}
	defer s.window.Release(room)
	actx, cancel := within(ctx)
	defer cancel()
	return true, s.call(actx, args, reply)
}

func (s *serverConn) try(ctx context.Context, args *wire.BatchArgs, reply *wire.BatchReply) (breaker.Verdict, error) {
	i := s.pick()
	lone := s.busy.Add(1) == 1 && len(args.Ops) <= LoneOps
	defer s.busy.Add(-1)
	c, err := s.get(ctx, i)
	if err != nil {
		if errors.Is(err, ErrClosed) || ctx.Err() == context.Canceled {
			return breaker.Neutral, err
		}
		return breaker.Failed, fmt.Errorf("%w: %s: %w", ErrUnavailable, s.addr, err)
	}
	callErr := c.Call(ctx, args, reply, lone)
	if callErr != nil && ctx.Err() != nil && errors.Is(callErr, ctx.Err()) {
		if ctx.Err() == context.DeadlineExceeded {
			// The server is slow or gone without a word. Drop the
			// connection, so that calls stuck on it fail now and the next
			// call (or probe) starts afresh.
			s.drop(i, c)
			return breaker.Failed, fmt.Errorf("%w: %s: no reply before the deadline: %w", ErrUnavailable, s.addr, ctx.Err())
		}
		return breaker.Neutral, ctx.Err()
	}
	if callErr == nil {
		return breaker.Succeeded, nil
	}
	if errors.Is(callErr, wire.ErrFrameTooLarge) { // nothing was sent
		return breaker.Neutral, fmt.Errorf("%w: %w", ErrTooLarge, callErr)
	}
	var serverErr rpc.ServerError
	if errors.As(callErr, &serverErr) {
		return breaker.Succeeded, fmt.Errorf("client: server %s rejected the batch: %s", s.addr, string(serverErr))
	}
	// The connection is broken (ErrShutdown, EOF, reset): redial next time.
	s.drop(i, c)
	return breaker.Failed, fmt.Errorf("%w: %s: %w", ErrUnavailable, s.addr, callErr)
}

func (s *serverConn) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for i, c := range s.clients {
		if c != nil {
			_ = c.Close()
			s.clients[i] = nil
		}
	}
}
