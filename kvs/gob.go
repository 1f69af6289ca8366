package kvs

import (
	"io"
	"net/http"

	"github.com/batchkv/batchkv/internal/gobrpc"
)

// The HTTP net/rpc path, which the course skeleton's client and the admin
// RPCs speak: an HTTP CONNECT, then gob. net/rpc's own handler would read
// each gob message at whatever length it announces (gob allocates the
// whole message before reading it), so the server serves that path with
// its own gob codec (package internal/gobrpc), which checks each length
// first.

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
	pc, ok := conn.(*httpConn)
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
	s.serveCodec(pc.st, gobrpc.NewServerCodec(conn, s.limits.MaxGobMessage, s.limits.MaxGobTypes))
}
