package client

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/rpc"
	"time"

	"github.com/batchkv/batchkv/wire"
)

// Admin reaches servers' admin RPCs (wire.LayoutMethod,
// wire.StatusMethod), which net/rpc serves over HTTP with gob. The zero
// value is plaintext.
type Admin struct {
	// TLS, when set, is the tls.Config to dial with; nil means plaintext.
	TLS *tls.Config
}

// Dial connects to the admin RPCs of the server at addr within timeout.
func (a Admin) Dial(addr string, timeout time.Duration) (*rpc.Client, error) {
	conn, err := dialConn(context.Background(), addr, timeout, a.TLS)
	if err != nil {
		return nil, err
	}
	return newHTTPClient(conn, addr, timeout)
}

// Discover asks the server at addr how the cluster places keys and
// returns a Config that routes like the servers do: every server, and the
// shards and replication factor when the cluster is replicated, with
// a.TLS.
func (a Admin) Discover(addr string, timeout time.Duration) (Config, error) {
	cl, err := a.Dial(addr, timeout)
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
	return Config{Servers: l.Servers, VirtualNodes: l.VirtualNodes, Shards: l.Shards, Replicas: l.Replicas, TLS: a.TLS}, nil
}

// Status asks the server at addr for its view of the shards it
// replicates (wire.StatusMethod), within timeout.
func (a Admin) Status(addr string, req wire.StatusRequest, timeout time.Duration) (wire.StatusReply, error) {
	var st wire.StatusReply
	cl, err := a.Dial(addr, timeout)
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

// DialAdmin is Admin{}.Dial: plaintext.
func DialAdmin(addr string, timeout time.Duration) (*rpc.Client, error) {
	return Admin{}.Dial(addr, timeout)
}

// Discover is Admin{}.Discover: plaintext.
func Discover(addr string, timeout time.Duration) (Config, error) {
	return Admin{}.Discover(addr, timeout)
}

// Status is Admin{}.Status: plaintext.
func Status(addr string, req wire.StatusRequest, timeout time.Duration) (wire.StatusReply, error) {
	return Admin{}.Status(addr, req, timeout)
}
