// Package autobatch is the client's auto-batcher: ops and runs of ops
// from concurrent callers coalesce into batches for one target (a server,
// or a shard when replicated), sent by a function the client gives it.
package autobatch

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/batchkv/batchkv/internal/coarsetimeout"
	"github.com/batchkv/batchkv/wire"
)

// Batcher coalesces single ops from concurrent callers into batches for one
// target: a server, or in a replicated cluster a shard.
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
// A run of one caller's ops (AddRun: a part of client.DoShared) is queued
// the same way, as a whole and in its order, with one waiter for the run.
//
// The other obvious alternative, one goroutine per server that owns the
// pending batch and receives ops on a channel, costs a channel send and a
// goroutine switch per op; a mutex held for an append costs less.
type Batcher struct {
	cfg      Config
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

// Config is a Batcher's settings, and how it sends.
type Config struct {
	MaxInFlight int           // batches in flight at most
	MaxBatchOps int           // the size at which a pending batch goes
	Linger      time.Duration // the longest an op waits behind batches in flight
	// Timeout bounds each batch sent (coarsely: package coarsetimeout).
	Timeout *coarsetimeout.Timeout
	// Sends counts every batch from its taking until its answer is
	// handed out, so that a client's Close can wait for them.
	Sends *sync.WaitGroup
	// Send sends a batch and fills its results.
	Send func(ctx context.Context, ops []wire.Op, results []wire.Result) error
}

// fits says whether n more ops of size bytes (opBytes) may join a pending
// batch of ops ops and size pending without taking it past
// wire.MaxBatchOps or maxPendingBytes; an empty batch takes any.
func fits(ops, pending, n, size int) bool {
	return ops == 0 || (ops+n <= wire.MaxBatchOps && pending+size <= maxPendingBytes)
}

// Outcome is what became of one op (Add).
type Outcome struct {
	Res    wire.Result
	Err    error // the batch's
	Shared bool  // other callers' ops were in its batch
}

// Run is a run of one caller's ops (AddRun; a part of client.DoShared):
// their results go to Dst, then what became of their batch to Done.
type Run struct {
	Part int // which part of the caller's batch
	Ops  []wire.Op
	Dst  []wire.Result
	Done chan<- RunDone
}

// RunDone is what became of a Run's batch: the Run's Part, the batch's
// error, and whether other callers' ops shared the batch.
type RunDone struct {
	Part   int
	Err    error
	Shared bool
}

// waiter is where the results of a pending batch's ops go: one op's
// outcome on one (Add), or a run's (AddRun).
type waiter struct {
	one chan Outcome
	run *Run
}

// len is how many of the batch's ops w waits for.
func (w waiter) len() int {
	if w.run != nil {
		return len(w.run.Ops)
	}
	return 1
}

// New returns a Batcher of cfg.
func New(cfg Config) *Batcher {
	return &Batcher{cfg: cfg, inflight: make(chan struct{}, cfg.MaxInFlight)}
}

// Add queues op; its outcome is sent on done, which must have room for it.
// When op finds nothing in flight, Add sends it at once from the calling
// goroutine, and returns once its outcome is on done.
func (b *Batcher) Add(ctx context.Context, op wire.Op, done chan Outcome) {
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

// AddRun queues r's ops, which go in one batch and in their order; their
// results are written to r.Dst and then what became of the batch is sent
// on r.Done, which must have room for it. When the ops find nothing in
// flight, they are sent at once, under ctx: from the calling goroutine if
// inline (AddRun returns once r.Done has its answer), else from a
// goroutine of their own. Ops that would take the pending batch past
// wire.MaxBatchOps or maxPendingBytes go in the next one.
func (b *Batcher) AddRun(ctx context.Context, r *Run, inline bool) {
	n := 0
	for i := range r.Ops {
		n += opBytes(&r.Ops[i])
	}
	b.mu.Lock()
	if !fits(len(b.ops), b.bytes, len(r.Ops), n) {
		b.sendLocked()
	}
	b.ops = append(b.ops, r.Ops...)
	b.bytes += n
	b.waits = append(b.waits, waiter{run: r})
	b.queuedLocked(ctx, len(r.Ops), inline)
}

// queuedLocked sends the pending batch, to which the caller just added n
// ops, if it is to go now, or arms the linger timer for its first ops;
// then it unlocks mu. A batch that finds nothing in flight holds only the
// caller's ops, and goes at once under the caller's ctx: from the calling
// goroutine if inline.
func (b *Batcher) queuedLocked(ctx context.Context, n int, inline bool) {
	switch {
	case b.sending == 0 && inline:
		ops, waits := b.takeLocked()
		b.mu.Unlock()
		b.send(ctx, ops, waits)
		return
	case b.sending == 0:
		ops, waits := b.takeLocked()
		go b.send(ctx, ops, waits)
	case len(b.ops) >= b.cfg.MaxBatchOps:
		b.sendLocked()
	case len(b.ops) == n:
		b.timer = time.AfterFunc(b.cfg.Linger, b.Flush)
	}
	b.mu.Unlock()
}

// Flush sends the pending batch, if any.
func (b *Batcher) Flush() {
	b.mu.Lock()
	if len(b.ops) > 0 {
		b.sendLocked()
	}
	b.mu.Unlock()
}

// sendLocked sends the pending batch from a goroutine of its own.
func (b *Batcher) sendLocked() {
	ops, waits := b.takeLocked()
	go b.send(context.Background(), ops, waits)
}

// takeLocked takes the pending batch for sending, counts it in flight and
// disarms the linger timer.
func (b *Batcher) takeLocked() ([]wire.Op, []waiter) {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	ops, waits := b.ops, b.waits
	b.ops, b.waits, b.bytes = nil, nil, 0
	b.sending++
	b.cfg.Sends.Add(1)
	return ops, waits
}

// answered counts a batch answered, and sends the batch that gathered
// meanwhile, if any.
func (b *Batcher) answered() {
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
func (b *Batcher) send(parent context.Context, ops []wire.Op, waits []waiter) {
	defer b.cfg.Sends.Done()
	b.inflight <- struct{}{}
	defer func() { <-b.inflight }()
	ctx, cancel := b.cfg.Timeout.Within(parent)
	defer cancel()
	results := make([]wire.Result, len(ops))
	err := b.cfg.Send(ctx, ops, results)
	b.answered()
	at := 0
	for _, w := range waits {
		if w.one != nil {
			r := results[at]
			// Values alias the whole reply; a caller may keep one for long.
			r.Value = strings.Clone(r.Value)
			w.one <- Outcome{Res: r, Err: err, Shared: len(waits) > 1}
		} else {
			copy(w.run.Dst, results[at:])
			w.run.Done <- RunDone{Part: w.run.Part, Err: err, Shared: len(waits) > 1}
		}
		at += w.len()
	}
}
