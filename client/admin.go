package client

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/rpc"
	"time"

	"github.com/batchkv/batchkv/internal/rpcdial"
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
	conn, err := rpcdial.Dial(context.Background(), addr, timeout, a.TLS)
	if err != nil {
		return nil, err
	}
	return rpcdial.HTTPClient(conn, addr, timeout, a.TLS != nil)
}

// Discover asks the server at addr how the cluster places keys and
// returns a Config that routes like the servers do: every server, and the
// shards and replication factor when the cluster is replicated, with
// a.TLS.
func (a Admin) Discover(addr string, timeout time.Duration) (Config, error) {
	l, err := a.Layout(addr, timeout)
	if err != nil {
		return Config{}, err
	}
	if len(l.Servers) == 0 {
		l.Servers = []string{addr}
	}
	cfg := Config{Servers: l.Servers, VirtualNodes: l.VirtualNodes, Shards: l.Shards, RF: l.Replicas, TLS: a.TLS}
	if l.Epoch > 0 {
		cfg.Map = &l
	}
	return cfg, nil
}

// Layout asks the server at addr how the cluster places keys
// (wire.LayoutMethod): a replicated server answers its current shard map.
func (a Admin) Layout(addr string, timeout time.Duration) (wire.ClusterMap, error) {
	return adminCall[wire.ClusterMap](a, addr, wire.LayoutMethod, &wire.LayoutRequest{}, timeout)
}

// Status asks the server at addr for its view of the shards it
// replicates (wire.StatusMethod), within timeout.
func (a Admin) Status(addr string, req wire.StatusRequest, timeout time.Duration) (wire.StatusReply, error) {
	return adminCall[wire.StatusReply](a, addr, wire.StatusMethod, &req, timeout)
}

// Membership makes one step of a shard move at the server at addr
// (wire.MembershipMethod), within timeout.
func (a Admin) Membership(addr string, req wire.MembershipRequest, timeout time.Duration) (wire.MembershipReply, error) {
	return adminCall[wire.MembershipReply](a, addr, wire.MembershipMethod, &req, timeout)
}

// adminCall makes one admin RPC on a connection of its own and returns
// its reply. The reply is decoded into a value of its own that is read
// only once the call is done: after a timeout net/rpc's reading goroutine
// may still be decoding into it while the connection closes.
func adminCall[Reply any](a Admin, addr, method string, args any, timeout time.Duration) (Reply, error) {
	reply := new(Reply)
	if err := a.call(addr, method, args, reply, timeout); err != nil {
		var zero Reply
		return zero, err
	}
	return *reply, nil
}

// call makes one admin RPC on a connection of its own; reply is written
// by another goroutine until the call is done, so the caller reads it
// only when call returns nil.
func (a Admin) call(addr, method string, args, reply any, timeout time.Duration) error {
	cl, err := a.Dial(addr, timeout)
	if err != nil {
		return err
	}
	defer func() { _ = cl.Close() }()
	call := cl.Go(method, args, reply, make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
	case <-time.After(timeout):
		return fmt.Errorf("client: %s: no answer to %s within %v", addr, method, timeout)
	}
	if call.Error != nil {
		return fmt.Errorf("client: %s: %s: %w", addr, method, call.Error)
	}
	return nil
}

// DialAdmin is Admin{}.Dial: plaintext.
func DialAdmin(addr string, timeout time.Duration) (*rpc.Client, error) {
	return Admin{}.Dial(addr, timeout)
}

// Discover is Admin{}.Discover: plaintext. For a TLS cluster use
// Admin{TLS: cfg}.Discover, which also puts cfg in the Config it returns.
func Discover(addr string, timeout time.Duration) (Config, error) {
	return Admin{}.Discover(addr, timeout)
}

// Status is Admin{}.Status: plaintext.
func Status(addr string, req wire.StatusRequest, timeout time.Duration) (wire.StatusReply, error) {
	return Admin{}.Status(addr, req, timeout)
}
