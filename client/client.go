// Package client is the Go client of the store. It routes each key to the
// server that owns it (consistent hashing, package ring), batches ops, and
// keeps several batches in flight over a few TCP connections per server.
//
//	c, err := client.New(client.Config{Servers: []string{"127.0.0.1:8080"}})
//	defer c.Close()
//	err = c.Put(ctx, "k", "v")
//	v, err := c.Get(ctx, "k")
//
// Get, Put, Delete and the conditional writes (CompareAndSwap,
// PutIfAbsent, PutIfPresent, Swap: see putif.go) are safe to call from
// many goroutines: ops from concurrent callers coalesce into one batch per
// server, sent when it is full (Config.MaxBatchOps), when an earlier batch
// to that server is answered, or after Config.Linger; an op that finds
// nothing in flight to its server goes at once, alone. Callers that build
// their own batches use Do, which splits a batch by owner and sends the
// parts to their servers concurrently, or DoShared, whose parts coalesce
// with other callers' ops as Get's and Put's do (a server forwarding its
// clients' batches uses it).
//
// If the client's server list differs from the servers' own (say it names
// only one server of four), the first server to notice answers "wrong ring";
// the client then sends every batch unrouted and lets the servers forward
// each op to its owner, so a client that knows one host still sees the
// whole store, one hop slower.
package client

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/batchkv/batchkv/internal/autobatch"
	"github.com/batchkv/batchkv/internal/coarsetimeout"
	"github.com/batchkv/batchkv/internal/session"
	"github.com/batchkv/batchkv/ring"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// Client talks to a set of servers. It is safe for concurrent use. The set
// of servers of a memory-only cluster is fixed for the life of a Client;
// a replicated cluster's grows as the client learns of servers that
// joined (see refreshMap).
type Client struct {
	cfg      Config
	ring     *ring.Ring
	members  atomic.Pointer[members]
	batchers []*autobatch.Batcher // by server, or by shard when replicated
	// BatchTimeout and AttemptTimeout, without a timer per call.
	batchTimeout, attemptTimeout *coarsetimeout.Timeout

	// Replicated clusters only (nil otherwise).
	layout   *shard.Layout
	place    atomic.Pointer[placement]
	leaders  []atomic.Int32 // by shard: the server (index in members) believed to lead it
	sessions *session.Pool
	refresh  mapRefresh
	// unrouted is set once a server reports that our ring differs from
	// its own; from then on batches go out with RingID 0.
	unrouted atomic.Bool
	closed   atomic.Bool
	closing  sync.Mutex     // orders Close against background refreshes starting
	wg       sync.WaitGroup // auto-batcher sends and map refreshes in flight
	traffic  traffic
}

// New returns a client for cfg. It does not connect until first use.
func New(cfg Config) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r, err := ring.New(cfg.Servers, cfg.VirtualNodes)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	c := &Client{cfg: cfg, ring: r}
	c.batchTimeout, c.attemptTimeout = coarsetimeout.New(cfg.BatchTimeout), coarsetimeout.New(cfg.AttemptTimeout)
	ms := &members{index: map[string]int{}}
	for _, addr := range cfg.Servers {
		ms = ms.with(addr, newServerConn(addr, &c.cfg, &c.traffic))
	}
	c.members.Store(ms)
	targets := len(cfg.Servers)
	if cfg.Shards > 0 {
		// The layout's placement is only the first guess of where shards
		// are (the servers redirect), so a client may know fewer servers
		// than there are replicas of a shard.
		if c.layout, err = shard.New(cfg.Servers, cfg.Shards, min(cfg.RF, len(cfg.Servers)), cfg.VirtualNodes); err != nil {
			return nil, fmt.Errorf("client: %w", err)
		}
		c.leaders = make([]atomic.Int32, cfg.Shards)
		p := &placement{replicas: make([][]int, cfg.Shards)}
		for s := range c.leaders {
			p.replicas[s] = c.layout.Replicas(s)
			c.leaders[s].Store(int32(c.layout.Preferred(s)))
		}
		c.place.Store(p)
		if cfg.Map != nil && cfg.Map.Shards == cfg.Shards {
			m, err := shard.FromWire(*cfg.Map)
			if err != nil {
				return nil, fmt.Errorf("client: Config.Map: %w", err)
			}
			c.adoptMap(m)
		}
		c.sessions = session.NewPool()
		targets = cfg.Shards
	}
	for i := range targets {
		c.batchers = append(c.batchers, autobatch.New(autobatch.Config{
			MaxInFlight: c.cfg.MaxInFlight, MaxBatchOps: c.cfg.MaxBatchOps, Linger: c.cfg.Linger, Timeout: c.batchTimeout, Sends: &c.wg,
			Send: func(ctx context.Context, ops []wire.Op, results []wire.Result) error {
				return c.sendTo(ctx, i, ops, results)
			},
		}))
	}
	return c, nil
}

// Health returns the client's view of each server, in Config.Servers
// order, followed by any servers it learned of since.
func (c *Client) Health() []ServerHealth {
	conns := c.members.Load().conns
	out := make([]ServerHealth, len(conns))
	for i, s := range conns {
		out[i] = serverHealth(s)
	}
	return out
}

// Ring returns the ring the client routes with.
func (c *Client) Ring() *ring.Ring { return c.ring }

// Close closes the connections. Calls in flight fail; later calls return
// ErrClosed. Close is idempotent.
func (c *Client) Close() error {
	c.closing.Lock()
	wasClosed := c.closed.Swap(true)
	c.closing.Unlock()
	if wasClosed {
		return nil
	}
	for _, b := range c.batchers {
		b.Flush()
	}
	c.wg.Wait()
	for _, s := range c.members.Load().conns {
		s.close()
	}
	return nil
}

// Do sends a batch of ops and returns one result per op, in order. Ops on
// the same key apply in batch order; ops for different servers are sent
// concurrently. Invalid ops (empty key, unknown code, over the limits) get
// their status in the results and change nothing.
//
// The error is non-nil if any part of the batch failed as a whole; results
// is filled all the same, with StatusUnavail for the ops of parts whose
// server could not be reached (a write among them may or may not have been
// applied) and the server's status for parts it rejected.
func (c *Client) Do(ctx context.Context, ops []wire.Op) ([]wire.Result, error) {
	results := make([]wire.Result, len(ops))
	return results, c.DoInto(ctx, ops, results)
}

// DoInto is Do writing into results, which must have len(ops) entries. It
// lets a caller that sends many batches reuse one results slice.
func (c *Client) DoInto(ctx context.Context, ops []wire.Op, results []wire.Result) error {
	if err := c.mayDo(ops, results); err != nil {
		return err
	}
	targets := len(c.batchers)
	if targets == 1 {
		return c.sendTo(ctx, 0, ops, results)
	}
	sp := c.split(ops, targets)
	subs := make([]wire.Result, len(ops))
	var g errgroup.Group
	for s := range targets {
		lo, hi := sp.start[s], sp.start[s+1]
		if lo == hi {
			continue
		}
		g.Go(func() error {
			part, sub := sp.ops[lo:hi], subs[lo:hi]
			err := c.sendTo(ctx, s, part, sub)
			for j, i := range sp.where[lo:hi] {
				results[i] = sub[j]
			}
			return err
		})
	}
	return g.Wait()
}

// mayDo is why a batch of ops, with its results, cannot be sent: the
// client is closed, results is not one per op, or the batch is over
// wire.MaxBatchOps; nil if it can.
func (c *Client) mayDo(ops []wire.Op, results []wire.Result) error {
	switch {
	case c.closed.Load():
		return ErrClosed
	case len(results) != len(ops):
		return fmt.Errorf("client: %d results for %d ops", len(results), len(ops))
	case len(ops) > wire.MaxBatchOps:
		return fmt.Errorf("%w: %d ops in one batch, limit %d", ErrTooLarge, len(ops), wire.MaxBatchOps)
	}
	return nil
}

// byTarget is a batch's ops grouped by target: target s's ops are
// ops[start[s]:start[s+1]], in the batch's order, and where[j] is the
// batch index of ops[j].
type byTarget struct {
	ops   []wire.Op
	where []int32
	start []int
}

// split groups ops by target (see route) in one slab each for the ops and
// their indices, sized by a count first: appending to a slice per target
// grew each of them several times per batch, a tenth of the load client's
// CPU.
func (c *Client) split(ops []wire.Op, targets int) byTarget {
	to := make([]int32, len(ops))
	start := make([]int, targets+1)
	for i := range ops {
		s := c.route(ops[i].Key)
		to[i] = int32(s)
		start[s+1]++
	}
	for s := range targets {
		start[s+1] += start[s]
	}
	sp := byTarget{ops: make([]wire.Op, len(ops)), where: make([]int32, len(ops)), start: start}
	next := slices.Clone(start[:targets])
	for i, s := range to {
		j := next[s]
		next[s]++
		sp.ops[j], sp.where[j] = ops[i], int32(i)
	}
	return sp
}

// route returns the target of key: its shard when replicated, else its
// server.
func (c *Client) route(key string) int {
	if c.layout != nil {
		return c.layout.Shard(key)
	}
	return c.ring.Owner(key)
}

// sendTo sends ops, all for one target (see route), and fills results.
func (c *Client) sendTo(ctx context.Context, target int, ops []wire.Op, results []wire.Result) error {
	if c.layout != nil {
		return c.sendShard(ctx, target, ops, results)
	}
	return c.send(ctx, target, ops, results)
}

// send sends ops, all owned by server s (or unrouted), and fills results.
func (c *Client) send(ctx context.Context, s int, ops []wire.Op, results []wire.Result) error {
	for attempt := 0; ; attempt++ {
		bc := batchCalls.Get().(*batchCall)
		bc.args = wire.BatchArgs{Ops: ops}
		if !c.unrouted.Load() {
			bc.args.RingID = c.ring.ID()
		}
		bc.reply = wire.BatchReply{Results: bc.reply.Results[:0]}
		args, reply := &bc.args, &bc.reply
		if err := c.members.Load().conns[s].call(ctx, args, reply); err != nil {
			// Not recycled: after a ctx error the reply may still be
			// written into.
			fill(results, wire.StatusUnavail)
			return err
		}
		var err error
		switch {
		case reply.Status == wire.StatusWrongRing && args.RingID != 0 && attempt == 0:
			// Nothing was applied: resend unrouted and let servers forward.
			c.unrouted.Store(true)
			bc.recycle()
			continue
		case reply.Status != wire.StatusOK:
			fill(results, reply.Status)
			err = fmt.Errorf("client: server %s rejected the batch (%s): %s", c.cfg.Servers[s], reply.Status, reply.Err)
		case len(reply.Results) != len(ops):
			fill(results, wire.StatusUnavail)
			err = fmt.Errorf("client: server %s sent %d results for %d ops", c.cfg.Servers[s], len(reply.Results), len(ops))
		default:
			copy(results, reply.Results)
		}
		bc.recycle()
		return err
	}
}

// batchCall is one call's arguments and reply, kept in batchCalls for the
// calls to come once its reply has been read: through the connection's
// interface both escaped, two of a lone op's allocations (see
// muxconn.pendingCalls for why they count), and the reply's results
// slice a third.
type batchCall struct {
	args  wire.BatchArgs
	reply wire.BatchReply
}

var batchCalls = sync.Pool{New: func() any { return new(batchCall) }}

// recycle returns bc to batchCalls, holding no ops and no values: a
// reply's values alias the buffer its frame was read into, which the
// caller now holds. A results slice longer than maxKeptResults is let go.
func (bc *batchCall) recycle() {
	bc.args = wire.BatchArgs{}
	rs := bc.reply.Results
	if cap(rs) > maxKeptResults {
		rs = nil
	}
	clear(rs[:cap(rs)])
	bc.reply = wire.BatchReply{Results: rs[:0]}
	batchCalls.Put(bc)
}

// maxKeptResults is the largest results slice a batchCall keeps: that of
// a batch of SmallBatchOps ops, about what lone callers send.
const maxKeptResults = wire.SmallBatchOps

func fill(results []wire.Result, st wire.Status) {
	for i := range results {
		results[i] = wire.Result{Status: st}
	}
}

// Get returns the value of key, or ErrNotFound.
func (c *Client) Get(ctx context.Context, key string) (string, error) {
	res, err := c.one(ctx, wire.Op{Code: wire.OpGet, Key: key})
	if err != nil {
		return "", err
	}
	if res.Status == wire.StatusNotFound {
		return "", ErrNotFound
	}
	return res.Value, nil
}

// Put sets key to value.
func (c *Client) Put(ctx context.Context, key, value string) error {
	_, err := c.one(ctx, wire.Op{Code: wire.OpPut, Key: key, Value: value})
	return err
}

// Delete removes key. Deleting a missing key is not an error.
func (c *Client) Delete(ctx context.Context, key string) error {
	_, err := c.one(ctx, wire.Op{Code: wire.OpDelete, Key: key})
	return err
}

// one sends a single op through the auto-batcher of its server.
func (c *Client) one(ctx context.Context, op wire.Op) (wire.Result, error) {
	switch op.Check() {
	case wire.StatusOK:
	case wire.StatusTooLarge:
		return wire.Result{}, fmt.Errorf("%w: key of %d bytes (limit %d), or value of %d bytes or expected value of %d bytes (limit %d)",
			ErrTooLarge, len(op.Key), wire.MaxKeyBytes, len(op.Value), len(op.Expect), wire.MaxValueBytes)
	default:
		return wire.Result{}, fmt.Errorf("%w: %s", ErrInvalid, op.Check())
	}
	if c.closed.Load() {
		return wire.Result{}, ErrClosed
	}
	done := make(chan autobatch.Outcome, 1)
	target := c.route(op.Key)
	c.batchers[target].Add(ctx, op, done)
	select {
	case o := <-done:
		if o.Err == nil && o.Shared && (autobatch.ReadRefused(&op, o.Res) || autobatch.DeleteRefused(&op, o.Res)) {
			// Other callers' gets took the values the batch could read,
			// or their puts were refused for memory: alone, it may be
			// served (see DoShared).
			res := make([]wire.Result, 1)
			o.Err = c.sendTo(ctx, target, []wire.Op{op}, res)
			o.Res = res[0]
		}
		if o.Err != nil {
			return o.Res, o.Err
		}
		if !o.Res.Status.Decided() { // (a mismatch is an OpPutIf's answer, not an error)
			return o.Res, opError(op, o.Res.Status)
		}
		return o.Res, nil
	case <-ctx.Done():
		return wire.Result{}, ctx.Err()
	}
}
