package client

import (
	"context"

	"github.com/batchkv/batchkv/wire"
)

// Conditional writes: CompareAndSwap, PutIfAbsent, PutIfPresent and Swap
// each send one wire.OpPutIf through the auto-batcher, like Put. The
// server decides the condition atomically with every other op on the key:
// at a replicated shard, in its state machine as it applies the log, so
// the decision is linearizable and a batch resent after a lost reply is
// answered as the first time, not decided again; at a memory-only server,
// under the store's lock of the key.
//
// A counter that many goroutines or processes increment:
//
//	cur, err := c.Get(ctx, "n") // or start from "0" if absent
//	for {
//		n, _ := strconv.Atoi(cur)
//		r, err := c.CompareAndSwap(ctx, "n", cur, strconv.Itoa(n+1))
//		if err != nil {
//			return err // outcome unknown: perhaps incremented
//		}
//		if r.Written {
//			break
//		}
//		cur = r.Value // someone else's increment: retry from theirs
//	}
//
// A lock:
//
//	r, err := c.PutIfAbsent(ctx, "lock", "owner-7")
//	if err == nil && !r.Written {
//		fmt.Println("held by", r.Value)
//	}
//
// In an explicit batch (Do), the same op is a wire.Op, and PutIfOutcome
// reads its result:
//
//	res, err := c.Do(ctx, []wire.Op{
//		{Code: wire.OpPutIf, Cond: wire.CondEqual, Key: "n", Expect: "41", Value: "42"},
//		{Code: wire.OpGet, Key: "n"},
//	})
//	r, err := client.PutIfOutcome(res[0])

// PutIfResult is the outcome of a conditional put.
type PutIfResult struct {
	// Written says the condition held and the value was written.
	Written bool
	// Found says the key held a value when the condition was decided.
	Found bool
	// Value is that value ("" when !Found): the value replaced, if
	// Written, else the key's current value.
	Value string
}

// PutIfOutcome reads the result of a wire.OpPutIf, or returns an error
// when the op got no decision (its status says why; StatusUnknown and
// StatusUnavail mean it may or may not have been applied).
func PutIfOutcome(r wire.Result) (PutIfResult, error) {
	if !r.Status.Decided() {
		return PutIfResult{}, opError(wire.Op{Code: wire.OpPutIf}, r.Status)
	}
	return PutIfResult{Written: r.Status.Applied(), Found: r.Status.Present(), Value: r.Value}, nil
}

// CompareAndSwap sets key to new if it holds old (present, and equal to
// old byte for byte; an absent key never matches). When it does not, the
// result's Value is the value key holds, to retry with.
func (c *Client) CompareAndSwap(ctx context.Context, key, old, new string) (PutIfResult, error) {
	return c.putIf(ctx, wire.Op{Code: wire.OpPutIf, Cond: wire.CondEqual, Key: key, Expect: old, Value: new})
}

// PutIfAbsent sets key to value if key is absent (Redis's SET NX). When
// key is present, the result's Value is its value.
func (c *Client) PutIfAbsent(ctx context.Context, key, value string) (PutIfResult, error) {
	return c.putIf(ctx, wire.Op{Code: wire.OpPutIf, Cond: wire.CondAbsent, Key: key, Value: value})
}

// PutIfPresent sets key to value if key is present (Redis's SET XX); the
// result's Value is the value replaced.
func (c *Client) PutIfPresent(ctx context.Context, key, value string) (PutIfResult, error) {
	return c.putIf(ctx, wire.Op{Code: wire.OpPutIf, Cond: wire.CondPresent, Key: key, Value: value})
}

// Swap sets key to value and returns what it held before (Redis's GETSET):
// the result is always Written, and Found says whether key was present.
func (c *Client) Swap(ctx context.Context, key, value string) (PutIfResult, error) {
	return c.putIf(ctx, wire.Op{Code: wire.OpPutIf, Cond: wire.CondAlways, Key: key, Value: value})
}

func (c *Client) putIf(ctx context.Context, op wire.Op) (PutIfResult, error) {
	res, err := c.one(ctx, op)
	if err != nil {
		return PutIfResult{}, err
	}
	return PutIfOutcome(res)
}
