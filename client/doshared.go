package client

import (
	"context"

	"github.com/batchkv/batchkv/internal/autobatch"
	"github.com/batchkv/batchkv/wire"
)

// DoShared is DoInto for a caller whose batches may share a request with
// other callers' batches, as a server's forwarding of its clients' batches
// does: each target's part of ops is sent at once when no batch to that
// target is in flight, and otherwise joins the batch pending for it,
// which goes when a batch in flight is answered, at Config.MaxBatchOps
// ops, or Config.Linger after its first op (as Get and Put do); a part
// that would take it past wire.MaxBatchOps ops or about 16 MiB of keys
// and values sends it first, and starts the next. Under many concurrent
// callers a target so gets fewer, larger batches: at RF=3 each is one log
// entry (or one per wire.MaxEntryBytes of writes) or read barrier per
// shard. A part of Config.MaxBatchOps ops or
// more goes at once on its own, as DoInto sends it.
//
// What sharing must not change, it does not: ops that fail wire.Op.Check
// get their status and are not sent, so that they cannot fail a batch
// they would share; and a get or conditional put that a shared batch
// answered StatusTooLarge (the server caps the values one batch reads) is
// sent again alone, when no other op of its part touches its key, so
// that it gets what it would have got alone. The values in results may
// alias a reply that holds other callers' values too.
//
// ctx bounds the wait: when it ends, DoShared returns ctx.Err() with the
// ops not yet answered marked as Do marks a part that failed
// (StatusUnavail; at RF=3 a write's outcome is StatusUnknown), though
// they may still be applied. A part sent alone is bounded by ctx, one
// that shares a batch by Config.BatchTimeout.
func (c *Client) DoShared(ctx context.Context, ops []wire.Op, results []wire.Result) error {
	if err := c.mayDo(ops, results); err != nil {
		return err
	}
	valid, where := autobatch.Checked(ops, results)
	if len(valid) == 0 {
		return nil
	}
	targets := len(c.batchers)
	sp := c.split(valid, targets)
	subs := make([]wire.Result, len(valid))
	var parts []int // the targets with ops
	for s := range targets {
		if sp.start[s] < sp.start[s+1] {
			parts = append(parts, s)
		}
	}
	done := make(chan autobatch.RunDone, len(parts))
	for k, s := range parts {
		lo, hi := sp.start[s], sp.start[s+1]
		last := k == len(parts)-1 // goes from this goroutine, which waits anyway
		if hi-lo >= c.cfg.MaxBatchOps {
			// A full batch by itself gains nothing from sharing, and is
			// sent as DoInto sends it, outside MaxInFlight.
			alone := func() { done <- autobatch.RunDone{Part: k, Err: c.sendTo(ctx, s, sp.ops[lo:hi], subs[lo:hi])} }
			if last {
				alone()
			} else {
				go alone()
			}
			continue
		}
		c.batchers[s].AddRun(ctx, &autobatch.Run{Part: k, Ops: sp.ops[lo:hi], Dst: subs[lo:hi], Done: done}, last)
	}
	answered, err := c.awaitParts(ctx, sp, parts, subs, done)
	// Each part's results go to its ops' places; those of a part not
	// answered (the batcher may still write its subs) are unavailable.
	for k, s := range parts {
		for j := sp.start[s]; j < sp.start[s+1]; j++ {
			i := sp.where[j]
			if where != nil {
				i = where[i]
			}
			switch {
			case answered[k]:
				results[i] = subs[j]
			case c.layout != nil && sp.ops[j].Code != wire.OpGet:
				results[i] = wire.Result{Status: wire.StatusUnknown} // as giveUp
			default:
				results[i] = wire.Result{Status: wire.StatusUnavail}
			}
		}
	}
	return err
}

// awaitParts waits for the answers of the parts (targets) of sp on done,
// their results in subs, until every part is answered or ctx ends, and
// sends again alone what a shared batch refused for other callers' ops
// (resendAlone). It returns which parts were answered, and the first
// error.
func (c *Client) awaitParts(ctx context.Context, sp byTarget, parts []int, subs []wire.Result, done <-chan autobatch.RunDone) ([]bool, error) {
	answered := make([]bool, len(parts))
	var err error
	for range parts {
		var d autobatch.RunDone
		select {
		case d = <-done:
		case <-ctx.Done():
			return answered, ctx.Err()
		}
		answered[d.Part] = true
		if d.Err == nil && d.Shared {
			s := parts[d.Part]
			lo, hi := sp.start[s], sp.start[s+1]
			d.Err = c.resendAlone(ctx, s, sp.ops[lo:hi], subs[lo:hi])
		}
		if d.Err != nil && err == nil {
			err = d.Err
		}
	}
	return answered, err
}

// resendAlone sends again, alone, the gets and conditional puts of
// part (the ops of one target, results in res) that a shared batch
// answered StatusTooLarge: the server caps the values one batch may read,
// and other callers' gets took some of that. So too the deletes of a part
// without puts that were refused with other callers' puts
// (StatusNoMemory). Only ops whose key no other op of the part touches
// are sent again, so that none moves past another op of the caller on
// its key; a conditional put answered TooLarge was not applied.
func (c *Client) resendAlone(ctx context.Context, target int, part []wire.Op, res []wire.Result) error {
	again := autobatch.Resendable(part, res)
	if len(again) == 0 {
		return nil
	}
	ops := make([]wire.Op, len(again))
	for n, j := range again {
		ops[n] = part[j]
	}
	out := make([]wire.Result, len(ops))
	err := c.sendTo(ctx, target, ops, out)
	for n, j := range again {
		res[j] = out[n]
	}
	return err
}
