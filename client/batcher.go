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
// A run of one caller's ops (addRun: a part of Client.DoShared) is queued
// the same way, as a whole and in its order, with one waiter for the run.
//
// The other obvious alternative, one goroutine per server that owns the
// pending batch and receives ops on a channel, costs a channel send and a
// goroutine switch per op; a mutex held for an append costs less.
type batcher struct {
	c        *Client
	server   int           // or shard
	inflight chan struct{} // semaphore of MaxInFlight slots

	mu      sync.Mutex
	ops     []wire.Op   // guarded by mu: the pending batch
	waits   []waiter    // guarded by mu: where the pending ops' results go, in their order
	timer   *time.Timer // guarded by mu: armed while a batch is pending
	sending int         // guarded by mu: batches sent and not yet answered
}

type outcome struct {
	res wire.Result
	err error
}

// waiter is where the results of a pending batch's ops go: one op's
// outcome on one (add), or a run of n ops' results into dst and the
// batch's error on done (addRun).
type waiter struct {
	one  chan outcome
	n    int
	dst  []wire.Result
	done chan<- error
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
	b.waits = append(b.waits, waiter{one: done, n: 1})
	b.queuedLocked(ctx, 1, true)
}

// addRun queues ops, which go in one batch and in their order; their
// results are written to dst and then the batch's error is sent on done,
// which must have room for it. When ops find nothing in flight, they are
// sent at once: from the calling goroutine if inline (addRun returns once
// done has the error), else from a goroutine of their own. Ops that would
// take the pending batch past wire.MaxBatchOps go in the next one.
func (b *batcher) addRun(ctx context.Context, ops []wire.Op, dst []wire.Result, done chan<- error, inline bool) {
	b.mu.Lock()
	if len(b.ops) > 0 && len(b.ops)+len(ops) > wire.MaxBatchOps {
		b.sendLocked()
	}
	b.ops = append(b.ops, ops...)
	b.waits = append(b.waits, waiter{n: len(ops), dst: dst, done: done})
	b.queuedLocked(ctx, len(ops), inline)
}

// queuedLocked sends the pending batch, to which the caller just added n
// ops, if it is to go now, or arms the linger timer for its first ops;
// then it unlocks mu. A batch that finds nothing in flight goes at once,
// from the calling goroutine if inline.
func (b *batcher) queuedLocked(ctx context.Context, n int, inline bool) {
	switch {
	case b.sending == 0 && inline:
		ops, waits := b.takeLocked()
		b.mu.Unlock()
		b.send(ctx, ops, waits)
		return
	case b.sending == 0, len(b.ops) >= b.c.cfg.MaxBatchOps:
		b.sendLocked()
	case len(b.ops) == n:
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
func (b *batcher) takeLocked() ([]wire.Op, []waiter) {
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
// the caller's context for a batch of one caller's ops sent from its own
// goroutine, and context.Background for a batch of several callers'.
func (b *batcher) send(parent context.Context, ops []wire.Op, waits []waiter) {
	defer b.c.wg.Done()
	b.inflight <- struct{}{}
	defer func() { <-b.inflight }()
	ctx, cancel := b.c.batchTimeout.Within(parent)
	defer cancel()
	results := make([]wire.Result, len(ops))
	err := b.c.sendTo(ctx, b.server, ops, results)
	b.answered()
	at := 0
	for _, w := range waits {
		if w.one != nil {
			r := results[at]
			// Values alias the whole reply; a caller may keep one for long.
			r.Value = strings.Clone(r.Value)
			w.one <- outcome{res: r, err: err}
		} else {
			copy(w.dst, results[at:at+w.n])
			w.done <- err
		}
		at += w.n
	}
}
