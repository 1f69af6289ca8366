package client

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// members are the servers a client knows, with a connection pool each.
// The list only grows: an index, once given, names the same server for
// the life of the Client, so that beliefs stored as indexes stay valid.
type members struct {
	addrs []string
	conns []*serverConn
	index map[string]int
}

// with returns ms with addr added (ms itself is not changed).
func (ms *members) with(addr string, conn *serverConn) *members {
	out := &members{addrs: append(slices.Clone(ms.addrs), addr), conns: append(slices.Clone(ms.conns), conn),
		index: make(map[string]int, len(ms.index)+1)}
	for k, v := range ms.index {
		out.index[k] = v
	}
	out.index[addr] = len(out.addrs) - 1
	return out
}

// placement is where a replicated cluster's shards are, as the client
// last learned: each shard's replicas (indexes into members), preferred
// leader first, and the epoch of the map it came from (0 until the first
// refresh: the initial layout computed from Config).
type placement struct {
	epoch    uint64
	replicas [][]int
}

// mapRefresh keeps refreshes of the map to one at a time (running), and
// apart (last, touched only by the one running).
type mapRefresh struct {
	last    time.Time
	running atomic.Bool // a background refresh is under way
	grow    sync.Mutex  // serializes adding members
}

// Map refreshes are at most this often; a refresh asks each server for
// at most refreshTimeout.
const (
	refreshEvery   = 50 * time.Millisecond
	refreshTimeout = time.Second
)

// learn returns the index of the server at addr among the members,
// adding it (with a connection pool) if the client had not heard of it.
func (c *Client) learn(addr string) int {
	if i, ok := c.members.Load().index[addr]; ok {
		return i
	}
	c.refresh.grow.Lock()
	defer c.refresh.grow.Unlock()
	ms := c.members.Load()
	if i, ok := ms.index[addr]; ok {
		return i
	}
	ms = ms.with(addr, newServerConn(addr, &c.cfg, &c.traffic))
	c.members.Store(ms)
	return ms.index[addr]
}

// refreshInBackground starts a map refresh unless one is running, and
// returns at once.
func (c *Client) refreshInBackground() {
	if !c.refresh.running.CompareAndSwap(false, true) {
		return
	}
	// Close sets closed under closing before it waits for wg: an Add
	// after that point would race with the Wait.
	c.closing.Lock()
	defer c.closing.Unlock()
	if c.closed.Load() {
		c.refresh.running.Store(false)
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer c.refresh.running.Store(false)
		c.refreshMap()
	}()
}

// Epoch returns the epoch of the shard map the client routes with: 0
// until it has learned one from the servers.
func (c *Client) Epoch() uint64 {
	if p := c.place.Load(); p != nil {
		return p.epoch
	}
	return 0
}

// refreshMap asks the servers the client knows for their shard maps and
// adopts the newest valid one, if newer than its own: servers that
// joined get connections, and shards whose believed leader is no longer
// a replica start again from their preferred replica. It runs in the
// background (refreshInBackground), one at a time.
func (c *Client) refreshMap() {
	if time.Since(c.refresh.last) < refreshEvery {
		return // one just ran
	}
	defer func() { c.refresh.last = time.Now() }()
	before := c.Epoch()
	addrs := c.members.Load().addrs
	maps := make([]wire.ClusterMap, len(addrs))
	var wg sync.WaitGroup
	admin := Admin{TLS: c.cfg.TLS}
	for i, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			maps[i], _ = admin.Layout(addr, refreshTimeout)
		}()
	}
	wg.Wait()
	var best *shard.Map
	for _, l := range maps {
		if l.Epoch <= before || l.Shards != len(c.leaders) || (best != nil && l.Epoch <= best.Epoch) {
			continue
		}
		// A map that does not validate (a shard with no replica, say) is
		// a server's bug or a stranger's: it is not routed by.
		if m, err := shard.FromWire(l); err == nil {
			best = m
		}
	}
	if best == nil {
		return
	}
	c.adoptMap(best)
}

// adoptMap makes m, a validated map, the client's placement.
func (c *Client) adoptMap(l *shard.Map) {
	for _, reps := range l.Placement {
		for _, addr := range reps {
			c.learn(addr)
		}
	}
	ms := c.members.Load()
	p := &placement{epoch: l.Epoch, replicas: make([][]int, len(l.Placement))}
	for s, reps := range l.Placement {
		for _, addr := range reps {
			p.replicas[s] = append(p.replicas[s], ms.index[addr])
		}
	}
	c.place.Store(p)
	for s := range c.leaders {
		if cur := int(c.leaders[s].Load()); !slices.Contains(p.replicas[s], cur) {
			c.leaders[s].CompareAndSwap(int32(cur), int32(p.replicas[s][0]))
		}
	}
}
