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
// the next, and ops enter a batch in the order add is called. At most
// MaxInFlight batches per server are in flight; a full batch waits for a
// slot, and so do its callers, which is what slows callers down when the
// server is slow instead of letting queues grow.
//
// When to send: an op that finds no batch of this batcher in flight goes
// at once, alone, in its caller's goroutine: a lone caller pays one round
// trip and nothing more. Ops that arrive while batches are in flight
// coalesce, and their batch goes when a batch in flight is answered, when
// it reaches MaxBatchOps, or Linger after its first op, whichever is
// first. So batches grow with the load by themselves (the answer to one
// batch sends the next, as TCP's Nagle algorithm does), and Linger only
// bounds the wait of an op behind a slow batch. A fixed linger for every
// op, the obvious alternative, made each lone Get wait 100µs for callers
// who never came.
//
// The other obvious alternative, one goroutine per server that owns the
// pending batch and receives ops on a channel, costs a channel send and a
// goroutine switch per op; a mutex held for an append costs less.
type batcher struct {
	c        *Client
	server   int           // or shard
	inflight chan struct{} // semaphore of MaxInFlight slots

	mu      sync.Mutex
	ops     []wire.Op      // guarded by mu: the pending batch
	waits   []chan outcome // guarded by mu: where each pending op's result goes
	timer   *time.Timer    // guarded by mu: armed while a batch is pending
	sending int            // guarded by mu: batches sent and not yet answered
}

type outcome struct {
	res wire.Result
	err error
}

func newBatcher(c *Client, server int) *batcher {
	return &batcher{c: c, server: server, inflight: make(chan struct{}, c.cfg.MaxInFlight)}
}

// add queues op; its outcome is sent on done, which must have room for it.
// When op finds nothing in flight, add sends it at once from the calling
// goroutine, and returns once its outcome is on done.
func (b *batcher) add(ctx context.Context, op wire.Op, done chan outcome) {
	b.mu.Lock()
	b.ops = append(b.ops, op)
	b.waits = append(b.waits, done)
	switch {
	case b.sending == 0:
		ops, waits := b.takeLocked()
		b.mu.Unlock()
		b.send(ctx, ops, waits)
		return
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

// sendLocked sends the pending batch from a goroutine of its own.
func (b *batcher) sendLocked() {
	ops, waits := b.takeLocked()
	go b.send(context.Background(), ops, waits)
}

// takeLocked takes the pending batch for sending, counts it in flight and
// disarms the linger timer.
func (b *batcher) takeLocked() ([]wire.Op, []chan outcome) {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	ops, waits := b.ops, b.waits
	b.ops, b.waits = nil, nil
	b.sending++
	b.c.wg.Add(1)
	return ops, waits
}

// answered counts a batch answered, and sends the batch that gathered
// meanwhile, if any.
func (b *batcher) answered() {
	b.mu.Lock()
	b.sending--
	if len(b.ops) > 0 {
		b.sendLocked()
	}
	b.mu.Unlock()
}

// send sends a batch and hands each op's outcome to its waiter. parent is
// the caller's context for a batch of one caller's op sent from its own
// goroutine, and context.Background for a batch of several callers'.
func (b *batcher) send(parent context.Context, ops []wire.Op, waits []chan outcome) {
	defer b.c.wg.Done()
	b.inflight <- struct{}{}
	defer func() { <-b.inflight }()
	ctx, cancel := b.c.batchTimeout.Within(parent)
	defer cancel()
	results := make([]wire.Result, len(ops))
	err := b.c.sendTo(ctx, b.server, ops, results)
	b.answered()
	for i, w := range waits {
		r := results[i]
		// Values alias the whole reply; a caller may keep one for long.
		r.Value = strings.Clone(r.Value)
		w <- outcome{res: r, err: err}
	}
}
