// Package respserver serves the Redis protocol (RESP2 and RESP3) on the
// batchkv server's port: the server (package kvs) tells a RESP connection
// from its first bytes and hands it to Serve, with a Link through which
// the connection's commands reach the server's backend. The commands that
// touch keys (GET, SET, MGET, MSET, DEL...) become the ops of one batch
// per read buffer, served as a BatchOp is; the others (PING, HELLO,
// CLIENT, INFO...) are answered here. Package resp parses the commands
// and writes the replies; docs/resp.md describes what is supported.
package respserver

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/batchkv/batchkv/wire"
)

// Config configures a Server.
type Config struct {
	// FrameTimeout bounds how long the rest of a command may take to
	// arrive once its first byte has; a connection that stalls half-way
	// is closed. Required.
	FrameTimeout time.Duration
	// TLS says the connections are TLS: a connection closed on a protocol
	// error is then not half-closed first.
	TLS bool
	// Logger receives why connections were closed. Nil means
	// slog.Default().
	Logger *slog.Logger
}

// Server serves RESP connections.
type Server struct {
	cfg Config
	ids atomic.Int64 // the last connection's id (CLIENT ID)
}

// New returns a Server for cfg.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Server{cfg: cfg}
}

// Link is the server's side of one RESP connection. The connection's
// goroutine alone calls it.
type Link interface {
	// Begin marks a request in flight, until End: the commands of one
	// read buffer, from their batch served to their replies written.
	Begin()
	// Batch serves the request's ops as a BatchOp, its reply's values
	// charged to the connection until End.
	Batch(args *wire.BatchArgs, reply *wire.BatchReply)
	// End marks the request's replies written; served says whether Batch
	// was called.
	End(served bool)
	// BadConn counts a connection closed on bad input.
	BadConn()
	// Keys, Uptime and Clients are what DBSIZE and INFO report: the keys
	// the server holds (a replicated server: in the shards it leads), how
	// long it has run, and its open connections.
	Keys() int
	Uptime() time.Duration
	Clients() int
}
