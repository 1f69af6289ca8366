package membership

import (
	"errors"
	"fmt"
	"net/rpc"
	"sync"
	"time"

	"github.com/batchkv/batchkv/wire"
)

// pool keeps one admin connection per server for the life of a Driver:
// a move makes dozens of calls, and on a loaded server a new connection
// for each (TCP, TLS, the HTTP upgrade) costs more than the call.
type pool struct {
	mu    sync.Mutex
	conns map[string]*rpc.Client
}

// errTimeout says a call got no answer within the Driver's RPCTimeout.
var errTimeout = errors.New("membership: no answer in time")

// invokeFor calls method at addr and returns its reply, decoded into a
// value read only once the call is done: after a timeout net/rpc's
// reading goroutine may still be decoding into it.
func invokeFor[Reply any](c *Driver, addr, method string, args any) (Reply, error) {
	reply := new(Reply)
	if err := c.invoke(addr, method, args, reply); err != nil {
		var zero Reply
		return zero, err
	}
	return *reply, nil
}

// invoke calls method at addr on a pooled connection. A connection that
// failed (rather than carrying a server's error) is closed and dropped.
func (c *Driver) invoke(addr, method string, args, reply any) error {
	cl, err := c.conn(addr)
	if err != nil {
		return err
	}
	call := cl.Go(method, args, reply, make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
		err = call.Error
	case <-time.After(c.timeout()):
		err = fmt.Errorf("%w: %s %s after %v", errTimeout, addr, method, c.timeout())
	}
	var serverErr rpc.ServerError
	if err != nil && !errors.As(err, &serverErr) {
		c.drop(addr, cl)
	}
	if err != nil {
		return fmt.Errorf("%s: %s: %w", addr, method, err)
	}
	return nil
}

func (c *Driver) conn(addr string) (*rpc.Client, error) {
	c.pool.mu.Lock()
	cl := c.pool.conns[addr]
	c.pool.mu.Unlock()
	if cl != nil {
		return cl, nil
	}
	cl, err := c.Admin.Dial(addr, c.timeout())
	if err != nil {
		return nil, err
	}
	c.pool.mu.Lock()
	defer c.pool.mu.Unlock()
	if c.pool.conns == nil {
		c.pool.conns = map[string]*rpc.Client{}
	}
	if old := c.pool.conns[addr]; old != nil {
		_ = cl.Close()
		return old, nil
	}
	c.pool.conns[addr] = cl
	return cl, nil
}

func (c *Driver) drop(addr string, cl *rpc.Client) {
	c.pool.mu.Lock()
	if c.pool.conns[addr] == cl {
		delete(c.pool.conns, addr)
	}
	c.pool.mu.Unlock()
	_ = cl.Close()
}

// Close waits for background work (publishing maps, closing replicas
// moved off a server), then closes the Driver's connections.
func (c *Driver) Close() error {
	c.bg.Wait()
	c.pool.mu.Lock()
	defer c.pool.mu.Unlock()
	for addr, cl := range c.pool.conns {
		_ = cl.Close()
		delete(c.pool.conns, addr)
	}
	return nil
}

// layout asks addr for its map.
func (c *Driver) layout(addr string) (wire.ClusterMap, error) {
	return invokeFor[wire.ClusterMap](c, addr, wire.LayoutMethod, &wire.LayoutRequest{})
}

// status asks addr for its view of its shards.
func (c *Driver) status(addr string) (wire.StatusReply, error) {
	return invokeFor[wire.StatusReply](c, addr, wire.StatusMethod, &wire.StatusRequest{})
}
