package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"strings"
	"time"

	"github.com/batchkv/batchkv/wire"
)

// stallKey is the key whose large value the stalled connections read.
const stallKey = "__kvsclient_stall__"

// stall is the pipelining attack on a server's memory (issue 35): it
// writes one value of valueBytes to stallKey through cl, then opens conns
// connections to addr, each sending requests pipelined batches of gets
// gets of stallKey, and never reads a reply, so that the server holds
// what it built for them until it gives up on them. It returns a function
// that closes the connections.
func stall(ctx context.Context, cl batchClient, addr string, conns, requests, gets, valueBytes int, stdout io.Writer) (func(), error) {
	res, err := cl.Do(ctx, []wire.Op{{Code: wire.OpPut, Key: stallKey, Value: strings.Repeat("s", valueBytes)}})
	if err != nil {
		return nil, fmt.Errorf("stall: writing the value: %w", err)
	}
	if res[0].Status != wire.StatusOK {
		return nil, fmt.Errorf("stall: writing the value: %s", res[0].Status)
	}
	ops := make([]wire.Op, gets)
	for i := range ops {
		ops[i] = wire.Op{Code: wire.OpGet, Key: stallKey}
	}
	var open []net.Conn
	closeAll := func() {
		for _, c := range open {
			_ = c.Close()
		}
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	for range conns {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("stall: %w", err)
		}
		open = append(open, c)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(4096) // read nothing, and buffer little of what comes
		}
		codec, err := wire.NewClientCodec(c)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("stall: %w", err)
		}
		for seq := range requests {
			req := rpc.Request{ServiceMethod: wire.BatchOpMethod, Seq: uint64(seq + 1)}
			if err := codec.WriteRequest(&req, &wire.BatchArgs{Ops: ops}); err != nil {
				closeAll()
				return nil, fmt.Errorf("stall: sending: %w", err)
			}
		}
	}
	fmt.Fprintf(stdout, "stall: %d connections to %s, each %d pipelined batches of %d gets of a %d-byte value, never read\n",
		conns, addr, requests, gets, valueBytes)
	return closeAll, nil
}
