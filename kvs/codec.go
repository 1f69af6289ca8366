package kvs

import (
	"errors"
	"io"
	"net"
	"net/rpc"
	"sync"
	"time"
	"unsafe"

	"github.com/batchkv/batchkv/internal/coarsetimeout"
	"github.com/batchkv/batchkv/internal/rpcserve"
	"github.com/batchkv/batchkv/kvs/backend"
	"github.com/batchkv/batchkv/wire"
)

// call is one request from the moment its header is read until its reply
// is written: the connection it came on and the reply bytes charged to
// it. A BatchOp is served with its call at hand (serveDirect); for the
// methods net/rpc calls, the Service finds the call of its arguments
// through Server.calls.
type call struct {
	backend.Call        // its connection's reply budget, and what the reply holds charged
	clientSeq    uint64 // the sequence number the client gave
	request      int64  // bytes charged to the request budgets until the reply is written
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

	cur   *call  // of the request whose header was just read; reader only
	next  uint64 // the codec's own sequence numbers; reader only
	mu    sync.Mutex
	calls map[uint64]*call // guarded by mu: by the codec's sequence number, until answered

	writeBy time.Time // the write deadline last set; rpcserve's writing lock guards it
}

// serveCodec serves rpc requests on a connection; it returns once the
// connection has ended and every request on it is answered. A small
// batch on an RF=1 server is served by the goroutine that read it.
func (s *Server) serveCodec(st *connState, inner rpc.ServerCodec) {
	st.perReply.Store(true)
	c := &serverCodec{ServerCodec: inner, s: s, st: st, slots: make(chan struct{}, s.limits.MaxInFlight),
		calls: map[uint64]*call{}}
	rpcserve.Serve(s.rpc, c, c.quick, c.serveDirect)
	s.drop(st)
}

// serveDirect serves a BatchOp as net/rpc would, without its reflection,
// and with the call at hand rather than looked up by its arguments: that
// per-request work made a lone op slower on the binary port than on the
// RESP port (docs/results.md, "Lone ops"). Other methods go to net/rpc.
// via is the codec that hands the reading on and writes one reply at a
// time.
func (c *serverCodec) serveDirect(req *rpc.Request, via rpc.ServerCodec) bool {
	if req.ServiceMethod != wire.BatchOpMethod {
		return false
	}
	cl := c.cur // before the body is read: then the reading may pass on
	args := new(wire.BatchArgs)
	if err := via.ReadRequestBody(args); err != nil {
		// net/rpc's answer to a body it cannot decode.
		_ = via.WriteResponse(&rpc.Response{ServiceMethod: req.ServiceMethod, Seq: req.Seq, Error: err.Error()}, struct{}{})
		return true
	}
	reply := new(wire.BatchReply)
	c.s.svc.batch(args, reply, cl)
	_ = via.WriteResponse(&rpc.Response{ServiceMethod: req.ServiceMethod, Seq: req.Seq}, reply)
	return true
}

// quick says whether a request (its arguments x) is served where it was
// read: a small batch or a legacy Get or Put, answered from this store.
func (c *serverCodec) quick(x any) bool {
	if !c.s.answersAlone {
		return false
	}
	switch a := x.(type) {
	case *wire.BatchArgs:
		return len(a.Ops) <= wire.SmallBatchOps
	case *wire.GetRequest, *wire.PutRequest:
		return true
	}
	return false
}

// ReadRequestHeader implements rpc.ServerCodec: it waits for a free slot,
// so a connection with MaxInFlight requests in flight is not read further,
// and while the connection or the server holds its request budget.
func (c *serverCodec) ReadRequestHeader(r *rpc.Request) error {
	c.slots <- struct{}{}
	waited := c.st.requests.Wait()
	if c.s.requests.Wait() || waited {
		c.s.stats.RequestWaits.Add(1)
	}
	if err := c.ServerCodec.ReadRequestHeader(r); err != nil {
		<-c.slots
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

// ReadRequestBody implements rpc.ServerCodec.
func (c *serverCodec) ReadRequestBody(x any) error {
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
	c.cur.request = RequestBytes(x)
	c.st.requests.Charge(c.cur.request)
	c.s.requests.Charge(c.cur.request)
	if _, batch := x.(*wire.BatchArgs); !batch {
		// For the Service's method, which net/rpc calls. A batch (the only
		// method that takes BatchArgs) is serveDirect's, which has its call.
		c.s.calls.Store(x, c.cur)
	}
	return nil
}

// RequestBytes is what a decoded request holds until its reply is
// written, as the request budgets count it: a routed batch's ops, their
// keys and values, and the results made for them. An unrouted batch
// (RingID 0), which the server forwards to its keys' owners, counts
// nothing: held while it waits on another server, which may itself wait
// for budget held by batches forwarded the other way, it could stall both.
// Its memory is bounded by Limits.MaxInFlight per connection. Other
// requests count nothing either.
func RequestBytes(x any) int64 {
	const perOp = int64(unsafe.Sizeof(wire.Op{}) + unsafe.Sizeof(wire.Result{}))
	a, ok := x.(*wire.BatchArgs)
	if !ok || a.RingID == 0 {
		return 0
	}
	n := perOp * int64(len(a.Ops))
	for i := range a.Ops {
		n += int64(len(a.Ops[i].Key) + len(a.Ops[i].Value) + len(a.Ops[i].Expect))
	}
	return n
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
	c.armWriteDeadline()
	err := c.ServerCodec.WriteResponse(r, x)
	if err != nil {
		// A reply not written within Limits.WriteTimeout, or a broken
		// connection: the stream is out of step, and a peer that does not
		// read must not hold its replies' memory.
		c.s.drop(c.st)
	}
	if cl != nil {
		c.s.releaseCall(cl)
		c.st.requests.Release(cl.request)
		c.s.requests.Release(cl.request)
		c.st.inflight.Add(-1)
		<-c.slots
	}
	return err
}

// armWriteDeadline gives the reply about to be written one deadline,
// however many writes it takes: at most Limits.WriteTimeout from now, and
// at least 15/16 of it. The deadline an earlier reply set serves while it
// is that far off, which spares most replies a runtime timer change.
func (c *serverCodec) armWriteDeadline() {
	timeout := c.s.limits.WriteTimeout
	now := time.Now()
	if coarsetimeout.Fresh(c.writeBy, now, timeout) {
		return
	}
	c.writeBy = now.Add(timeout)
	_ = c.st.raw.SetWriteDeadline(c.writeBy)
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
