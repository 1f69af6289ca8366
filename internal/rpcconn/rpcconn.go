// Package rpcconn is the client's connection to one batchkv port, in
// either codec: Dial opens it (binary, multiplexed by package muxconn, or
// net/rpc's gob over HTTP), and Call sends a batch and waits for its
// reply.
//
//	c, err := rpcconn.Dial(ctx, "127.0.0.1:8080", "binary", time.Second, nil, &rx, &tx, nil)
//	err = c.Call(ctx, &args, &reply, false)
package rpcconn

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/rpc"
	"sync/atomic"
	"time"

	"github.com/batchkv/batchkv/internal/busypoll"
	"github.com/batchkv/batchkv/internal/muxconn"
	"github.com/batchkv/batchkv/internal/netcount"
	"github.com/batchkv/batchkv/internal/rawsock"
	"github.com/batchkv/batchkv/internal/rpcdial"
	"github.com/batchkv/batchkv/wire"
)

// Conn is one connection's calls: a batch sent, its reply awaited.
type Conn interface {
	// Call sends args and waits for the reply in reply, or for ctx: then
	// it returns ctx.Err(), and reply must not be reused, for the reply
	// may still be written into it. A server's error comes back as an
	// rpc.ServerError; any other error means the connection is broken.
	// lone: see muxconn.Conn.Call.
	Call(ctx context.Context, args *wire.BatchArgs, reply *wire.BatchReply, lone bool) error
	Close() error
}

// netrpcConn is a net/rpc client (the gob codec's).
type netrpcConn struct{ *rpc.Client }

// Call implements Conn; net/rpc has no lone calls.
func (c netrpcConn) Call(ctx context.Context, args *wire.BatchArgs, reply *wire.BatchReply, _ bool) error {
	call := c.Go(wire.BatchOpMethod, args, reply, make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
		return call.Error
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Dial opens one net/rpc connection with the named codec: "binary" (the
// default) or "gob", which speaks net/rpc's own HTTP CONNECT handshake and
// gob encoding, as the course skeleton's client does; over TLS when
// tlsCfg is set. A binary connection's lone calls poll as lonePoll
// chooses, if its socket can (not over TLS, whose reads are the TLS
// layer's). The bytes it receives and sends are counted in in and out,
// as TCP carries them.
func Dial(ctx context.Context, addr, codec string, timeout time.Duration, tlsCfg *tls.Config, in, out *atomic.Uint64, lonePoll *busypoll.Policy) (Conn, error) {
	raw, err := rpcdial.Dial(ctx, addr, timeout, tlsCfg)
	if err != nil {
		return nil, err
	}
	conn := &netcount.Conn{Conn: raw, In: in, Out: out}
	switch codec {
	case "", "binary":
		cc, err := wire.NewClientCodec(conn)
		if err != nil {
			_ = conn.Close()
			return nil, err
		}
		var polling *muxconn.Polling
		if sp, ok := raw.(rawsock.ReadSpinner); ok {
			polling = &muxconn.Polling{Socket: sp, Policy: lonePoll}
		}
		return muxconn.New(conn, cc, polling), nil
	case "gob":
		rc, err := rpcdial.HTTPClient(conn, addr, timeout, tlsCfg != nil)
		if err != nil {
			return nil, err
		}
		return netrpcConn{rc}, nil
	}
	_ = conn.Close()
	return nil, fmt.Errorf("client: unknown codec %q (want binary or gob)", codec)
}
