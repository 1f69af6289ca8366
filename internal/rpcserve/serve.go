// Package rpcserve serves a net/rpc connection as rpc.Server's ServeCodec
// does, two differences apart: a quick request is served by the goroutine
// that read it, which then reads on, and a method may be served by a
// function of the caller's own, without net/rpc's reflection. ServeCodec
// starts a goroutine for every request, and so wakes two per call: its
// reader, then the call's.
package rpcserve

import (
	"net/rpc"
	"sync"
)

// Direct serves a request itself, or leaves it to net/rpc. It is given
// the header of a request just read. To leave the request, it returns
// false having read nothing more. To serve it, it reads the body and
// writes the reply through codec, as rpc.Server does (a body that cannot
// be read is answered with the error), and returns true. Reading the body
// through codec hands the reading on as Serve says.
type Direct func(req *rpc.Request, codec rpc.ServerCodec) bool

// Serve serves codec's requests with srv until the stream ends and every
// request read is answered, then closes codec. quick says, of a request's
// decoded arguments, whether it is served where it was read: any other
// request first hands the reading to a new goroutine, so that a slow one
// holds up none behind it. direct is offered each request before srv.
// Replies are written one at a time.
func Serve(srv *rpc.Server, codec rpc.ServerCodec, quick func(args any) bool, direct Direct) {
	c := &conn{ServerCodec: codec, srv: srv, quick: quick, direct: direct, finished: make(chan struct{})}
	c.read()
	<-c.finished
}

type conn struct {
	rpc.ServerCodec
	srv    *rpc.Server
	quick  func(any) bool
	direct Direct

	// The reader's own: one goroutine at a time reads.
	handOff *bool        // set when the reader started the next one
	ended   bool         // a header could not be read: the stream is over
	replay  *rpc.Request // a header direct left to srv, read again by srv

	serving  sync.WaitGroup // goroutines serving a request after handing the reading on
	finished chan struct{}  // closed once every request is answered and codec closed
	writing  sync.Mutex     // one reply written at a time
}

// read reads requests and serves them, until it hands the reading on or
// the stream ends; the last reader waits for the requests still being
// served, and closes the codec.
func (c *conn) read() {
	for {
		var handedOff bool
		c.handOff = &handedOff
		c.serveOne()
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
	close(c.finished)
}

// serveOne serves one request, by direct or by srv. A bad request's error
// is answered; a header that cannot be read ends the stream.
func (c *conn) serveOne() {
	var req rpc.Request
	if c.ReadRequestHeader(&req) != nil {
		return
	}
	if c.direct(&req, c) {
		return
	}
	c.replay = &req
	_ = c.srv.ServeRequest(c)
}

// ReadRequestHeader implements rpc.ServerCodec.
func (c *conn) ReadRequestHeader(r *rpc.Request) error {
	if c.replay != nil {
		*r = *c.replay
		c.replay = nil
		return nil
	}
	err := c.ServerCodec.ReadRequestHeader(r)
	if err != nil {
		c.ended = true
	}
	return err
}

// ReadRequestBody implements rpc.ServerCodec. Once the body is read, the
// next reader starts unless the request is quick.
func (c *conn) ReadRequestBody(x any) error {
	err := c.ServerCodec.ReadRequestBody(x)
	if x != nil && !c.quick(x) {
		*c.handOff = true
		c.serving.Add(1)
		go c.read()
	}
	return err
}

// WriteResponse implements rpc.ServerCodec. rpc.Server's ServeRequest
// serializes no writes across requests, as ServeCodec does: this does.
func (c *conn) WriteResponse(r *rpc.Response, x any) error {
	c.writing.Lock()
	defer c.writing.Unlock()
	return c.ServerCodec.WriteResponse(r, x)
}
