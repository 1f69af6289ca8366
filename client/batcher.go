package client

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/batchkv/batchkv/wire"
)

// batcher coalesces single ops from concurrent callers into batches for one
// server (or, in a replicated cluster, one shard).
//
// Invariants: ops from one caller reach the server in the order the caller
// issued them, because a caller waits for each op's result before issuing
// the next, and ops enter a batch in the order add is called. A pending
// batch is sent when it reaches MaxBatchOps, or Linger after its first op
// arrived, whichever is first. At most MaxInFlight batches per server are in
// flight; a full batch waits for a slot, and so do its callers, which is
// what slows callers down when the server is slow instead of letting queues
// grow.
//
// The obvious alternative, one goroutine per server that owns the pending
// batch and receives ops on a channel, costs a channel send and a goroutine
// switch per op; a mutex held for an append costs less.
type batcher struct {
	c        *Client
	server   int           // or shard
	inflight chan struct{} // semaphore of MaxInFlight slots

	mu    sync.Mutex
	ops   []wire.Op      // guarded by mu: the pending batch
	waits []chan outcome // guarded by mu: where each pending op's result goes
	timer *time.Timer    // guarded by mu: armed while a batch is pending
}

type outcome struct {
	res wire.Result
	err error
}

func newBatcher(c *Client, server int) *batcher {
	return &batcher{c: c, server: server, inflight: make(chan struct{}, c.cfg.MaxInFlight)}
}

// add queues op; its outcome is sent on done, which must have room for it.
func (b *batcher) add(op wire.Op, done chan outcome) {
	b.mu.Lock()
	b.ops = append(b.ops, op)
	b.waits = append(b.waits, done)
	switch {
	case len(b.ops) >= b.c.cfg.MaxBatchOps:
		b.sendLocked()
	case len(b.ops) == 1:
		b.timer = time.AfterFunc(b.c.cfg.Linger, b.flush)
	}
	b.mu.Unlock()
}

// flush sends the pending batch, if any.
func (b *batcher) flush() {
	b.mu.Lock()
	if len(b.ops) > 0 {
		b.sendLocked()
	}
	b.mu.Unlock()
}

func (b *batcher) sendLocked() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	ops, waits := b.ops, b.waits
	b.ops, b.waits = nil, nil
	b.c.wg.Add(1)
	go b.send(ops, waits)
}

func (b *batcher) send(ops []wire.Op, waits []chan outcome) {
	defer b.c.wg.Done()
	b.inflight <- struct{}{}
	defer func() { <-b.inflight }()
	ctx, cancel := context.WithTimeout(context.Background(), b.c.cfg.BatchTimeout)
	defer cancel()
	results := make([]wire.Result, len(ops))
	err := b.c.sendTo(ctx, b.server, ops, results)
	for i, w := range waits {
		r := results[i]
		// Values alias the whole reply; a caller may keep one for long.
		r.Value = strings.Clone(r.Value)
		w <- outcome{res: r, err: err}
	}
}
