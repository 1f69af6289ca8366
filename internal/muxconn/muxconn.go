// Package muxconn is the client's connection for the binary codec: calls
// multiplexed by sequence number, with no reader goroutine of its own.
package muxconn

import (
	"context"
	"errors"
	"net"
	"net/rpc"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batchkv/batchkv/internal/busypoll"
	"github.com/batchkv/batchkv/internal/rawsock"
	"github.com/batchkv/batchkv/wire"
)

// Conn multiplexes calls over one binary-codec connection by sequence
// number, as net/rpc's Client does, but has no goroutine of its own
// reading the replies: a caller that finds nobody reading reads them
// itself until its own arrives, decoding each other reply for its caller
// and waking it, and when it leaves with calls still waiting it wakes
// one of them to read on. A lone caller so reads its own reply, and one
// goroutine wakes per call where net/rpc wakes two (its reader, then the
// caller): on a 2-core VM each hand-off between threads costs tens of
// microseconds.
//
// A lone call (Call's lone) may poll the socket for its reply rather
// than sleep until it comes, as the Conn's Polling chooses.
//
// A reader whose ctx ends while it waits for a reply's first byte stops
// at once and leaves the connection as it was; once a reply has begun,
// it reads it to the end.
type Conn struct {
	raw      net.Conn
	codec    *wire.ClientCodec
	polling  *Polling    // nil: no call polls
	spinning atomic.Bool // the reader set a spin on polling's socket

	writing sync.Mutex // one request written at a time

	mu      sync.Mutex
	seq     uint64                  // guarded by mu
	pending map[uint64]*pendingCall // guarded by mu: sent and not yet answered
	reading bool                    // guarded by mu: a caller is reading replies
	broken  error                   // guarded by mu: set once the connection fails

	// A reader waiting for a reply's first byte is woken when its
	// context ends: guarded by mu.
	awaitingDone <-chan struct{} // the Done of the waiting reader's context; nil: none, or one that cannot end
	watchedDone  <-chan struct{} // the Done of the context that watchStop watches
	watchStop    func() bool     // stops the watch (context.AfterFunc)
	lastDone     <-chan struct{} // the Done of the last reader's context
}

// pendingCall is a call waiting for its reply.
type pendingCall struct {
	reply *wire.BatchReply
	wake  chan struct{} // answered, or the reading is free: look again
	done  bool          // guarded by Conn.mu
	err   error         // guarded by Conn.mu
}

// pendingCalls keeps answered calls, with their wake channels, for the
// calls to come: the two were half of a lone call's allocations, and
// each garbage collection they bring on wakes the runtime's monitor
// thread, which then runs every 20 µs for a while, on the same core as
// the calls when client and server share one (docs/results.md, "Lone
// ops").
var pendingCalls = sync.Pool{New: func() any { return &pendingCall{wake: make(chan struct{}, 1)} }}

// newPendingCall returns a call waiting for its reply in reply.
func newPendingCall(reply *wire.BatchReply) *pendingCall {
	pc := pendingCalls.Get().(*pendingCall)
	pc.reply = reply
	return pc
}

// recycle returns pc, answered, to pendingCalls, its wake channel
// drained. Once done, pc is in no Conn's pending map, and every wake is
// sent under Conn.mu, so none for it comes later.
func (pc *pendingCall) recycle() {
	select {
	case <-pc.wake:
	default:
	}
	pc.reply, pc.done, pc.err = nil, false, nil
	pendingCalls.Put(pc)
}

// errConnBroken is what the calls on a failed connection get when no
// error of the connection's own says more.
var errConnBroken = errors.New("muxconn: connection closed")

// Polling lets a lone call poll its socket for its reply, rather than
// sleep until it comes, when its Policy finds that quicker (package
// busypoll).
type Polling struct {
	Socket rawsock.ReadSpinner // the socket under the codec
	Policy *busypoll.Policy
}

// New returns a Conn over raw, whose codec is codec; with polling not
// nil, its lone calls may poll for their replies.
func New(raw net.Conn, codec *wire.ClientCodec, polling *Polling) *Conn {
	return &Conn{raw: raw, codec: codec, polling: polling, pending: map[uint64]*pendingCall{}}
}

// Call sends args and waits for the reply in reply, or for ctx: then it
// returns ctx.Err(), and reply must not be reused, for the reply may
// still be written into it. A server's error comes back as an
// rpc.ServerError; any other error means the connection is broken.
//
// lone says that the caller expects its reply soon and has no other call
// in flight to the server. Such a call that finds no other on the
// connection times itself for the Conn's Polling, and, if it is the one
// that reads its reply (a call that comes meanwhile may take the reading
// first; then it is not timed), polls for it as the Polling chooses. A
// reply that is a server's error counts; a failure does not.
func (c *Conn) Call(ctx context.Context, args *wire.BatchArgs, reply *wire.BatchReply, lone bool) error {
	pc := newPendingCall(reply)
	c.mu.Lock()
	if c.broken != nil {
		c.mu.Unlock()
		return c.broken
	}
	c.seq++
	seq := c.seq
	c.pending[seq] = pc
	timed := lone && c.polling != nil && len(c.pending) == 1 && !c.reading
	c.mu.Unlock()
	var spin time.Duration
	var start time.Time
	if timed {
		spin, start = c.polling.Policy.Choose(), time.Now()
	}

	c.writing.Lock()
	err := c.codec.WriteRequest(&rpc.Request{ServiceMethod: wire.BatchOpMethod, Seq: seq}, args)
	c.writing.Unlock()
	if err != nil {
		if errors.Is(err, wire.ErrFrameTooLarge) { // nothing was sent
			c.forget(seq)
			return err
		}
		c.fail(err)
	}
	readSelf := false // the call read its own reply: its time is the way it took
	for {
		c.mu.Lock()
		if pc.done {
			err := pc.err
			c.mu.Unlock()
			pc.recycle()
			if timed && readSelf && (err == nil || isServerError(err)) {
				c.polling.Policy.Observe(spin, time.Since(start))
			}
			return err
		}
		if !c.reading {
			c.reading = true
			c.mu.Unlock()
			if spin > 0 {
				c.spinning.Store(true)
				c.polling.Socket.SetReadSpin(spin) // undone as the reading is given up
			}
			err := c.readUntil(ctx, pc)
			if err != nil {
				c.forget(seq)
				return err
			}
			readSelf = true
			continue
		}
		c.mu.Unlock()
		select {
		case <-pc.wake:
		case <-ctx.Done():
			c.mu.Lock()
			done := pc.done
			c.mu.Unlock()
			if done {
				continue
			}
			c.forget(seq)
			return ctx.Err()
		}
	}
}

// isServerError says whether err is a server's error reply. (Its
// variable, whose address errors.As takes, is allocated only when a call
// fails.)
func isServerError(err error) bool {
	var serverErr rpc.ServerError
	return errors.As(err, &serverErr)
}

// forget gives up the call seq, if still pending: its reply, if one
// comes, is read and dropped. If nobody reads, a waiting call is woken to.
func (c *Conn) forget(seq uint64) {
	c.mu.Lock()
	delete(c.pending, seq)
	if !c.reading {
		c.wakeOneLocked()
	}
	c.mu.Unlock()
}

// wakeOneLocked wakes one waiting call, if any, to take up the reading.
func (c *Conn) wakeOneLocked() {
	for _, p := range c.pending {
		select {
		case p.wake <- struct{}{}:
		default:
		}
		return
	}
}

// readUntil reads replies until pc's has been read, or ctx ends while it
// waits for one to begin (then it returns ctx.Err()), or the connection
// fails. It holds the reading, and gives it up before it returns.
func (c *Conn) readUntil(ctx context.Context, pc *pendingCall) error {
	done := ctx.Done() // nil for a context that cannot end (Background's)
	if done != nil {
		c.mu.Lock()
		c.watchLocked(ctx)
		c.mu.Unlock()
		defer c.settleWatch(done)
	}
	for {
		c.mu.Lock()
		// Checked and set under one hold of mu, which the watch takes: a
		// context that ends after the check finds the wait to end.
		if ctx.Err() != nil { // between replies: the stream is in step
			c.mu.Unlock()
			c.leaveReading()
			return ctx.Err()
		}
		c.awaitingDone = done
		c.mu.Unlock()
		err := c.codec.Await()
		c.mu.Lock()
		c.awaitingDone = nil
		c.mu.Unlock()
		if ctx.Err() != nil {
			// The deadline may have been set: clear it; a reply that has
			// begun is read to its end below.
			_ = c.raw.SetReadDeadline(time.Time{})
			var ne net.Error
			if err != nil && errors.As(err, &ne) && ne.Timeout() {
				c.leaveReading()
				return ctx.Err()
			}
		}
		if err != nil {
			c.fail(err)
			return nil
		}
		mine, err := c.readOne(pc)
		if err != nil {
			c.fail(err)
			return nil
		}
		if mine {
			c.leaveReading()
			return nil
		}
	}
}

// watchLocked makes the end of ctx, which can end, wake a reader that
// waits for a reply under a context of the same Done. A watch that
// settleWatch keeps serves every later call whose context shares its
// Done, until one with another Done replaces it or the connection fails:
// a caller that makes its calls under one context registers it twice,
// not once a call (a registration and its removal cost a lone call 0.3
// µs of 21 on one core, and its p99 about 2 µs).
func (c *Conn) watchLocked(ctx context.Context) {
	done := ctx.Done()
	if done == c.watchedDone {
		return
	}
	c.stopWatchLocked()
	c.watchedDone = done
	c.watchStop = context.AfterFunc(ctx, func() {
		c.mu.Lock()
		// Only a wait under this context: one that ends late, after the
		// reading passed to a call under another, leaves that one alone.
		if c.awaitingDone == done {
			_ = c.raw.SetReadDeadline(time.Unix(1, 0)) // wakes the wait now
		}
		c.mu.Unlock()
	})
}

// settleWatch, as a reading under a context of Done done ends, keeps the
// watch for the calls to come only if the reading before was under that
// Done too. A context made for one call, and cancelled once it returns,
// so finds its watch stopped: a watch left on it would start a goroutine
// when it is cancelled, a wake for nothing.
func (c *Conn) settleWatch(done <-chan struct{}) {
	c.mu.Lock()
	if c.watchedDone == done && c.lastDone != done {
		c.stopWatchLocked()
	}
	c.lastDone = done
	c.mu.Unlock()
}

// stopWatchLocked stops the watch, if any.
func (c *Conn) stopWatchLocked() {
	if c.watchStop != nil {
		c.watchStop()
	}
	c.watchedDone, c.watchStop = nil, nil
}

// readOne reads one reply and hands it to its call; mine says it was
// pc's.
func (c *Conn) readOne(pc *pendingCall) (mine bool, err error) {
	var resp rpc.Response
	if err := c.codec.ReadResponseHeader(&resp); err != nil {
		return false, err
	}
	c.mu.Lock()
	p := c.pending[resp.Seq]
	delete(c.pending, resp.Seq)
	c.mu.Unlock()
	var callErr error
	switch {
	case p == nil || resp.Error != "":
		// A call given up, or an error reply: the body is dropped.
		if err := c.codec.ReadResponseBody(nil); err != nil {
			return false, err
		}
		if resp.Error != "" {
			callErr = rpc.ServerError(resp.Error)
		}
	default:
		if err := c.codec.ReadResponseBody(p.reply); err != nil {
			if !errors.Is(err, wire.ErrMalformed) {
				// The stream is broken; p, out of pending, ends with it.
				c.answer(p, pc, err)
				return false, err
			}
			callErr = err // the frame was read whole; the stream is in step
		}
	}
	if p == nil {
		return false, nil
	}
	c.answer(p, pc, callErr)
	return p == pc, nil
}

// answer marks p, taken out of pending, done with err, and wakes it if it
// is not pc, the reader's own call. The wake is sent under mu, as every
// wake is: once p's caller sees it done, no wake for it is still to come,
// so the call may be recycled with its wake channel drained.
func (c *Conn) answer(p, pc *pendingCall, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p.done, p.err = true, err
	if p != pc {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// leaveReading gives up the reading, and wakes a waiting call to take it.
func (c *Conn) leaveReading() {
	c.stopSpin()
	c.mu.Lock()
	c.reading = false
	c.wakeOneLocked()
	c.mu.Unlock()
}

// stopSpin undoes a lone call's SetReadSpin before the reading passes on,
// so that the next reader does not poll.
func (c *Conn) stopSpin() {
	if c.spinning.Swap(false) {
		c.polling.Socket.SetReadSpin(0)
	}
}

// fail marks the connection broken by err, ends every pending call with
// it, and closes the connection.
func (c *Conn) fail(err error) {
	c.stopSpin()
	c.mu.Lock()
	if c.broken == nil {
		c.broken = err
	}
	c.reading = false
	c.stopWatchLocked()
	for seq, p := range c.pending {
		p.done, p.err = true, c.broken
		delete(c.pending, seq)
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
	c.mu.Unlock()
	_ = c.raw.Close()
}

// Close closes the connection; calls waiting on it fail.
func (c *Conn) Close() error {
	c.fail(errConnBroken)
	return nil
}
