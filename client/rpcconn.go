package client

import (
	"context"
	"net/rpc"

	"github.com/batchkv/batchkv/internal/muxconn"
	"github.com/batchkv/batchkv/wire"
)

// rpcConn is one connection's calls: a batch sent, its reply awaited.
type rpcConn interface {
	// call sends args and waits for the reply in reply, or for ctx: then
	// it returns ctx.Err(), and reply must not be reused, for the reply
	// may still be written into it. A server's error comes back as an
	// rpc.ServerError; any other error means the connection is broken.
	// lone: see muxconn.Conn.Call.
	call(ctx context.Context, args *wire.BatchArgs, reply *wire.BatchReply, lone bool) error
	Close() error
}

// netrpcConn is a net/rpc client (the gob codec's).
type netrpcConn struct{ *rpc.Client }

func (c netrpcConn) call(ctx context.Context, args *wire.BatchArgs, reply *wire.BatchReply, _ bool) error {
	call := c.Go(wire.BatchOpMethod, args, reply, make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
		return call.Error
	case <-ctx.Done():
		return ctx.Err()
	}
}

// muxCall is a binary-codec connection (package muxconn).
type muxCall struct{ *muxconn.Conn }

func (c muxCall) call(ctx context.Context, args *wire.BatchArgs, reply *wire.BatchReply, lone bool) error {
	return c.Call(ctx, args, reply, lone)
}
