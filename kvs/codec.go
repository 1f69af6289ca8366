package kvs

import (
	"errors"
	"io"
	"net"
	"net/rpc"
	"sync"
	"time"

	"github.com/batchkv/batchkv/kvs/backend"
	"github.com/batchkv/batchkv/wire"
)

// call is one request from the moment its header is read until its reply
// is written: the connection it came on and the reply bytes charged to
// it. The Service finds the call of its arguments through Server.calls.
type call struct {
	backend.Call        // its connection's reply budget, and what the reply holds charged
	clientSeq    uint64 // the sequence number the client gave
}

// charges is what cl's reply values are charged to; nil for no call.
func (cl *call) charges() *backend.Call {
	if cl == nil {
		return nil
	}
	return &cl.Call
}

// serverCodec wraps a connection's rpc.ServerCodec (binary or gob) with
// the per-connection limits: at most Limits.MaxInFlight requests being
// served, reply bytes charged until written, content digests only for
// those allowed, and a log line for a connection closed on bad input.
type serverCodec struct {
	rpc.ServerCodec
	s     *Server
	st    *connState
	slots chan struct{} // one per request in flight

	// The reader's own state: one goroutine at a time reads (see read),
	// and the next one starts only after the last read.
	cur     *call  // of the request whose header was just read
	next    uint64 // the codec's own sequence numbers
	handOff *bool  // the reader's: set when it started the next reader
	ended   bool   // a header could not be read: the stream is over

	serving sync.WaitGroup // goroutines serving a request after handing the reading on
	writing sync.Mutex     // one reply written at a time
	mu      sync.Mutex
	calls   map[uint64]*call // guarded by mu: by the codec's sequence number, until answered
}

// inlineOps is the largest batch the goroutine that read it serves
// itself, on a server whose backend answers without waiting on a peer.
const inlineOps = 32

// serveCodec serves rpc requests on a connection until it ends.
func (s *Server) serveCodec(st *connState, inner rpc.ServerCodec) {
	st.perReply.Store(true)
	c := &serverCodec{ServerCodec: inner, s: s, st: st, slots: make(chan struct{}, s.limits.MaxInFlight),
		calls: map[uint64]*call{}}
	c.read()
}

// read reads requests and serves them. A request that is quick to serve
// (quick) it serves in this goroutine and then reads on: a lone small
// batch costs no goroutine and no hand-off between threads, which on a
// 2-core VM cost tens of microseconds each. Before serving any other
// request it hands the reading on to a new goroutine, so that a slow
// request (a Raft commit, a digest) holds up none behind it, as net/rpc's
// ServeCodec, which serves every request in a goroutine of its own, does.
// The last reader closes the connection once every request is answered.
func (c *serverCodec) read() {
	for {
		var handedOff bool
		c.handOff = &handedOff
		_ = c.s.rpc.ServeRequest(c) // a bad request's error was answered, or the stream ended
		if handedOff {
			c.serving.Done()
			return
		}
		if c.ended {
			break
		}
	}
	c.serving.Wait()
	_ = c.ServerCodec.Close()
	c.s.drop(c.st)
}

// quick says whether the request whose arguments are x is served in the
// goroutine that read it: a small batch or a legacy Get or Put, on a
// server that answers them from its own store.
func (c *serverCodec) quick(x any) bool {
	if !c.s.answersAlone {
		return false
	}
	switch a := x.(type) {
	case *wire.BatchArgs:
		return len(a.Ops) <= inlineOps
	case *wire.GetRequest, *wire.PutRequest:
		return true
	}
	return false
}

// handOn starts the next reader, unless x is quick to serve.
func (c *serverCodec) handOn(x any) {
	if c.quick(x) {
		return
	}
	*c.handOff = true
	c.serving.Add(1)
	go c.read()
}

// ReadRequestHeader implements rpc.ServerCodec: it waits for a free slot,
// so a connection with MaxInFlight requests in flight is not read further.
func (c *serverCodec) ReadRequestHeader(r *rpc.Request) error {
	c.slots <- struct{}{}
	if err := c.ServerCodec.ReadRequestHeader(r); err != nil {
		<-c.slots
		c.ended = true
		if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.ErrUnexpectedEOF) {
			c.bad(err)
		}
		return err
	}
	// The client's sequence numbers need not be unique; calls are tracked
	// by the codec's own, and the client's is put back in the reply.
	c.next++
	c.cur = &call{Call: backend.Call{Conn: c.st.replies}, clientSeq: r.Seq}
	r.Seq = c.next
	c.mu.Lock()
	c.calls[r.Seq] = c.cur
	c.mu.Unlock()
	c.st.inflight.Add(1)
	return nil
}

// ReadRequestBody implements rpc.ServerCodec. Once the body is read,
// the next reader starts unless this request is served inline (read).
func (c *serverCodec) ReadRequestBody(x any) error {
	err := c.readBody(x)
	if x != nil {
		c.handOn(x)
	}
	return err
}

func (c *serverCodec) readBody(x any) error {
	if err := c.ServerCodec.ReadRequestBody(x); err != nil {
		if !errors.Is(err, wire.ErrMalformed) && !errors.Is(err, wire.ErrTooManyOps) {
			c.bad(err) // the connection is out of step; the codec closed it
		}
		return err
	}
	if x == nil {
		return nil
	}
	if sr, ok := x.(*wire.StatusRequest); ok && sr.Digest {
		if err := c.s.mayDigest(c.st); err != nil {
			return err
		}
	}
	if mr, ok := x.(*wire.MembershipRequest); ok && mr.Op.Changes() {
		if err := c.s.mayChangeMembership(c.st); err != nil {
			return err
		}
	}
	c.s.calls.Store(x, c.cur)
	return nil
}

// WriteResponse implements rpc.ServerCodec: once the reply is written (or
// the write failed), its charge and its slot are released.
func (c *serverCodec) WriteResponse(r *rpc.Response, x any) error {
	c.mu.Lock()
	cl := c.calls[r.Seq]
	delete(c.calls, r.Seq)
	c.mu.Unlock()
	if cl != nil {
		r.Seq = cl.clientSeq
	}
	// One deadline for the whole reply, however many writes it takes.
	c.writing.Lock()
	_ = c.st.raw.SetWriteDeadline(time.Now().Add(c.s.limits.WriteTimeout))
	err := c.ServerCodec.WriteResponse(r, x)
	c.writing.Unlock()
	if err != nil {
		// A reply not written within Limits.WriteTimeout, or a broken
		// connection: the stream is out of step, and a peer that does not
		// read must not hold its replies' memory.
		c.s.drop(c.st)
	}
	if cl != nil {
		c.s.releaseCall(cl)
		c.st.inflight.Add(-1)
		<-c.slots
	}
	return err
}

func (c *serverCodec) bad(err error) {
	c.s.stats.BadConns.Add(1)
	c.s.log.Warn("closing connection", "remote", c.st.raw.RemoteAddr(), "err", err)
}

// callOf returns the call whose decoded arguments are args, and forgets
// it; nil for a call that did not come through a serverCodec (a test or
// benchmark calling the Service directly).
func (s *Server) callOf(args any) *call {
	if v, ok := s.calls.LoadAndDelete(args); ok {
		return v.(*call)
	}
	return nil
}

// releaseCall gives back what cl's reply held charged, once written.
func (s *Server) releaseCall(cl *call) { s.apply.Release(&cl.Call) }
