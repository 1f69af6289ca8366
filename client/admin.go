package client

import (
	"fmt"
	"net"
	"net/rpc"
	"time"

	"github.com/batchkv/batchkv/wire"
)

// DialAdmin connects to a server's admin RPCs (wire.LayoutMethod,
// wire.StatusMethod), which net/rpc serves over HTTP with gob.
func DialAdmin(addr string, timeout time.Duration) (*rpc.Client, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return newHTTPClient(conn, addr, timeout)
}

// Discover asks the server at addr how the cluster places keys and
// returns a Config that routes like the servers do: every server, and the
// shards and replication factor when the cluster is replicated.
func Discover(addr string, timeout time.Duration) (Config, error) {
	cl, err := DialAdmin(addr, timeout)
	if err != nil {
		return Config{}, err
	}
	defer func() { _ = cl.Close() }()
	var l wire.Layout
	call := cl.Go(wire.LayoutMethod, &wire.LayoutRequest{}, &l, make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
	case <-time.After(timeout):
		return Config{}, fmt.Errorf("client: %s: no layout within %v", addr, timeout)
	}
	if call.Error != nil {
		return Config{}, fmt.Errorf("client: %s: layout: %w", addr, call.Error)
	}
	if len(l.Servers) == 0 {
		l.Servers = []string{addr}
	}
	return Config{Servers: l.Servers, VirtualNodes: l.VirtualNodes, Shards: l.Shards, Replicas: l.Replicas}, nil
}

// Status asks the server at addr for its view of the shards it
// replicates (wire.StatusMethod), within timeout.
func Status(addr string, req wire.StatusRequest, timeout time.Duration) (wire.StatusReply, error) {
	var st wire.StatusReply
	cl, err := DialAdmin(addr, timeout)
	if err != nil {
		return st, err
	}
	defer func() { _ = cl.Close() }()
	call := cl.Go(wire.StatusMethod, &req, &st, make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
		return st, call.Error
	case <-time.After(timeout):
		return st, fmt.Errorf("client: %s: no status within %v", addr, timeout)
	}
}
