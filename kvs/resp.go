package kvs

import (
	"net"
	"time"

	"github.com/batchkv/batchkv/kvs/backend"
	"github.com/batchkv/batchkv/wire"
)

// serveRESP hands a RESP connection, whose first bytes, prefix, were read
// to tell its protocol, to the RESP server (package kvs/respserver).
func (s *Server) serveRESP(st *connState, conn net.Conn, prefix []byte) {
	defer s.drop(st)
	s.resp.Serve(conn, st.raw, prefix, &respLink{s: s, st: st})
}

// respLink is the server's side of one RESP connection: its requests
// count in flight for the idle reaper, and their reply values are charged
// to the connection's and the server's reply budgets, as a BatchOp's are.
type respLink struct {
	s  *Server
	st *connState
	cl *call // of the request in flight
}

// Begin implements respserver.Link.
func (l *respLink) Begin() {
	l.st.inflight.Add(1)
	l.cl = &call{Call: backend.Call{Conn: l.st.replies}}
}

// Batch implements respserver.Link.
func (l *respLink) Batch(args *wire.BatchArgs, reply *wire.BatchReply) {
	l.s.svc.batch(args, reply, l.cl)
}

// End implements respserver.Link.
func (l *respLink) End(served bool) {
	l.s.releaseCall(l.cl)
	l.cl = nil
	l.st.inflight.Add(-1)
}

// BadConn implements respserver.Link.
func (l *respLink) BadConn() { l.s.stats.BadConns.Add(1) }

// Keys implements respserver.Link.
func (l *respLink) Keys() int { return l.s.svc.backend.Keys() }

// Uptime implements respserver.Link.
func (l *respLink) Uptime() time.Duration { return time.Since(l.s.started) }

// Clients implements respserver.Link.
func (l *respLink) Clients() int { return l.s.Conns() }
