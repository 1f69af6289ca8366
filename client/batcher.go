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
	bytes   int         // guarded by mu: the pending batch's keys and values, and a word per op
	waits   []waiter    // guarded by mu: where the pending ops' results go, in their order
	timer   *time.Timer // guarded by mu: armed while a batch is pending
	sending int         // guarded by mu: batches sent and not yet answered
}

// maxPendingBytes is the most bytes of keys and values (opBytes) a pending
// batch gathers before it goes: a shared batch of large values stays well
// under wire.MaxFrameBytes, over which the whole request would fail.
const maxPendingBytes = 16 << 20

// opBytes is what op adds to a batch's request, about.
func opBytes(op *wire.Op) int { return len(op.Key) + len(op.Value) + len(op.Expect) + 8 }

// fits says whether n more ops of size bytes (opBytes) may join a pending
// batch of ops ops and size pending without taking it past
// wire.MaxBatchOps or maxPendingBytes; an empty batch takes any.
func fits(ops, pending, n, size int) bool {
	return ops == 0 || (ops+n <= wire.MaxBatchOps && pending+size <= maxPendingBytes)
}

type outcome struct {
	res    wire.Result
	err    error
	shared bool // other callers' ops were in its batch
}

// waiter is where the results of a pending batch's ops go: one op's
// outcome on one (add), or a run's (addRun).
type waiter struct {
	one chan outcome
	run *run
}

// run is a run of one caller's ops (a part of Client.DoShared): their
// results go to dst, then what became of their batch to done.
type run struct {
	part int // which part of the caller's batch
	ops  []wire.Op
	dst  []wire.Result
	done chan<- runDone
}

// len is how many of the batch's ops w waits for.
func (w waiter) len() int {
	if w.run != nil {
		return len(w.run.ops)
	}
	return 1
}

func newBatcher(c *Client, server int) *batcher {
	return &batcher{c: c, server: server, inflight: make(chan struct{}, c.cfg.MaxInFlight)}
}

// add queues op; its outcome is sent on done, which must have room for it.
// When op finds nothing in flight, add sends it at once from the calling
// goroutine, and returns once its outcome is on done.
func (b *batcher) add(ctx context.Context, op wire.Op, done chan outcome) {
	b.mu.Lock()
	n := opBytes(&op)
	if !fits(len(b.ops), b.bytes, 1, n) {
		b.sendLocked()
	}
	b.ops = append(b.ops, op)
	b.bytes += n
	b.waits = append(b.waits, waiter{one: done})
	b.queuedLocked(ctx, 1, true)
}

// addRun queues r's ops, which go in one batch and in their order; their
// results are written to r.dst and then what became of the batch is sent
// on r.done, which must have room for it. When the ops find nothing in
// flight, they are sent at once, under ctx: from the calling goroutine if
// inline (addRun returns once r.done has its answer), else from a
// goroutine of their own. Ops that would take the pending batch past
// wire.MaxBatchOps or maxPendingBytes go in the next one.
func (b *batcher) addRun(ctx context.Context, r *run, inline bool) {
	n := 0
	for i := range r.ops {
		n += opBytes(&r.ops[i])
	}
	b.mu.Lock()
	if !fits(len(b.ops), b.bytes, len(r.ops), n) {
		b.sendLocked()
	}
	b.ops = append(b.ops, r.ops...)
	b.bytes += n
	b.waits = append(b.waits, waiter{run: r})
	b.queuedLocked(ctx, len(r.ops), inline)
}

// queuedLocked sends the pending batch, to which the caller just added n
// ops, if it is to go now, or arms the linger timer for its first ops;
// then it unlocks mu. A batch that finds nothing in flight holds only the
// caller's ops, and goes at once under the caller's ctx: from the calling
// goroutine if inline.
func (b *batcher) queuedLocked(ctx context.Context, n int, inline bool) {
	switch {
	case b.sending == 0 && inline:
		ops, waits := b.takeLocked()
		b.mu.Unlock()
		b.send(ctx, ops, waits)
		return
	case b.sending == 0:
		ops, waits := b.takeLocked()
		go b.send(ctx, ops, waits)
	case len(b.ops) >= b.c.cfg.MaxBatchOps:
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
	b.ops, b.waits, b.bytes = nil, nil, 0
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
			w.one <- outcome{res: r, err: err, shared: len(waits) > 1}
		} else {
			copy(w.run.dst, results[at:])
			w.run.done <- runDone{part: w.run.part, err: err, shared: len(waits) > 1}
		}
		at += w.len()
	}
}
