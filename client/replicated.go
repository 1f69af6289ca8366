package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/batchkv/batchkv/wire"
)

// A replicated cluster (Config.Shards > 0) answers each shard's ops at its
// Raft leader. The client keeps its belief of every shard's leader, starts
// with the shard's preferred replica, follows the leader hints of
// StatusNotLeader replies, and tries the next replica when a server cannot
// be reached or knows no leader, backing off between rounds, until the
// call's context ends.
//
// Every request is sent on a session of its own for the duration of the
// call, numbered within the session; a request resent after a lost reply
// carries the same session and number, and the shard applies its writes
// once. A shard's part of a batch is one request, unless its writes would
// make a log entry past wire.MaxEntryBytes (sendShard).

// Backoff between retries of a replicated batch.
const (
	retryBackoffMin = 10 * time.Millisecond
	retryBackoffMax = 200 * time.Millisecond
)

// leaderOf returns the server the client believes leads shard.
func (c *Client) leaderOf(shard int) int { return int(c.leaders[shard].Load()) }

// nextReplica moves shard's believed leader from server from to the next
// replica, unless someone already moved it.
func (c *Client) nextReplica(shard, from int) {
	reps := c.place.Load().replicas[shard]
	i := slices.Index(reps, from)
	c.leaders[shard].CompareAndSwap(int32(from), int32(reps[(i+1)%len(reps)]))
}

// replicatedWindow bounds the bytes of replicated requests a client has
// in flight to one server (wire.BatchArgsBound of each; a larger one
// waits for the whole window). A request waits for room before its
// attempt's timeout starts: under a write-heavy load of large values
// (YCSB-A of 4 KiB values, 128 goroutines of 8,192 ops, RF=3) requests
// otherwise queued at the leader past the attempt timeout, were sent
// again, and the load fell to a few hundred ops a second.
const replicatedWindow = 32 << 20

// splitInFlight is how many requests of one part cut by wire.EntryCuts
// are in flight at once.
const splitInFlight = 8

// sendShard sends ops, all of one shard, as one request, or, when their
// writes would make a log entry past wire.MaxEntryBytes, as several
// (wire.EntryCuts): up to splitInFlight at once when no two ops share a
// key, and one after another otherwise, so that ops on one key keep their
// order. As with a batch's parts for several shards, one request failing
// fails the call, and the others' results stand as answered. A request
// not sent, because one before it failed or ctx ended, leaves its ops
// StatusUnavail (or the status of their own fault, as a server would
// answer it).
func (c *Client) sendShard(ctx context.Context, shard int, ops []wire.Op, results []wire.Result) error {
	cuts, sizes := wire.EntryCuts(ops)
	if len(cuts) == 2 {
		return c.sendShardOnce(ctx, shard, ops, results, sizes[0])
	}
	notSent := func(from, to int) { unsent(ops[from:to], results[from:to]) }
	send := func(i int) error {
		if err := ctx.Err(); err != nil {
			notSent(cuts[i], cuts[i+1])
			return c.giveUp(nil, nil, err)
		}
		return c.sendShardOnce(ctx, shard, ops[cuts[i]:cuts[i+1]], results[cuts[i]:cuts[i+1]], sizes[i])
	}
	if !wire.DistinctKeys(ops) {
		for i := 0; i+1 < len(cuts); i++ {
			if err := send(i); err != nil {
				notSent(cuts[i+1], len(ops))
				return err
			}
		}
		return nil
	}
	var g errgroup.Group
	g.SetLimit(splitInFlight)
	for i := 0; i+1 < len(cuts); i++ {
		g.Go(func() error { return send(i) })
	}
	return g.Wait()
}

// sendShardOnce sends ops, all of one shard, to its leader as one
// request of size bytes at most (wire.BatchArgsBound), following
// redirects and retrying with the same session number until the results
// are final or ctx ends.
func (c *Client) sendShardOnce(ctx context.Context, shard int, ops []wire.Op, results []wire.Result, size int) error {
	sess := c.sessions.Get()
	defer c.sessions.Put(sess)
	sess.Seq++
	args := wire.BatchArgs{RingID: c.layout.ID(), Shard: uint32(shard), Session: sess.ID, Seq: sess.Seq, Ops: ops}
	backoff := retryBackoffMin
	var lastErr error
	quick := 0 // redirects followed without a pause
	room := min(int64(size), replicatedWindow)
	for attempt := 0; ; attempt++ {
		if attempt == 1 {
			c.traffic.resent.Add(uint64(len(ops)))
		}
		srv := c.leaderOf(shard)
		ms := c.members.Load()
		var reply wire.BatchReply
		sent, err := ms.conns[srv].callInWindow(ctx, room, c.attemptTimeout.Within, &args, &reply)
		switch {
		case !sent && attempt == 0:
			unsent(ops, results)
			return c.giveUp(nil, nil, err)
		case !sent:
			return c.giveUp(ops, results, fmt.Errorf("%w (last: %w)", err, lastErr))
		}
		redirected := false
		switch {
		case err != nil:
			lastErr = err
			if errors.Is(err, ErrClosed) || errors.Is(err, ErrTooLarge) || ctx.Err() != nil {
				return c.giveUp(ops, results, err)
			}
			c.nextReplica(shard, srv)
		case reply.Status != wire.StatusOK:
			fill(results, reply.Status)
			return fmt.Errorf("client: server %s rejected the batch (%s): %s", ms.addrs[srv], reply.Status, reply.Err)
		case len(reply.Results) != len(ops):
			lastErr = fmt.Errorf("client: server %s sent %d results for %d ops", ms.addrs[srv], len(reply.Results), len(ops))
			c.nextReplica(shard, srv)
		case retryStatus(reply.Results) == wire.StatusOK:
			copy(results, reply.Results)
			return nil
		default:
			st := retryStatus(reply.Results)
			lastErr = fmt.Errorf("client: shard %d: %s answered %s", shard, ms.addrs[srv], st)
			hint, known := ms.index[reply.Leader]
			if st == wire.StatusMoved || (reply.Leader != "" && !known) {
				// Our map is stale: the shard moved, or its leader is a
				// server we have not heard of. Follow the hint at once
				// (connecting to a new server if need be) and fetch the
				// map in the background.
				c.refreshInBackground()
				if reply.Leader != "" {
					hint, known = c.learn(reply.Leader), true
				}
			}
			if known && hint != srv {
				redirected = c.leaders[shard].CompareAndSwap(int32(srv), int32(hint)) || c.leaderOf(shard) != srv
			} else {
				c.nextReplica(shard, srv)
			}
		}
		if redirected && quick < 2 {
			quick++
			continue // a fresh hint: follow it at once
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		backoff = min(2*backoff, retryBackoffMax)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return c.giveUp(ops, results, fmt.Errorf("%w (last: %w)", ctx.Err(), lastErr))
		}
	}
}

// unsent fills the results of ops that were never sent: StatusUnavail,
// or the status of their own fault, as a server would answer it.
func unsent(ops []wire.Op, results []wire.Result) {
	for j := range ops {
		results[j] = wire.Result{Status: cmp.Or(ops[j].Check(), wire.StatusUnavail)}
	}
}

// retryStatus returns the status of the first op that must be resent
// (its replica was not the leader, or lost leadership before the write's
// fate was known, or the shard is not on that server), or StatusOK when
// none must.
func retryStatus(results []wire.Result) wire.Status {
	for i := range results {
		if st := results[i].Status; st == wire.StatusNotLeader || st == wire.StatusUnknown || st == wire.StatusMoved {
			return st
		}
	}
	return wire.StatusOK
}

// giveUp fills the results of a batch that got no final answer: writes
// may or may not have been applied, reads were not answered.
func (c *Client) giveUp(ops []wire.Op, results []wire.Result, err error) error {
	for i := range ops {
		switch {
		case ops[i].Check() != wire.StatusOK:
			results[i] = wire.Result{Status: ops[i].Check()}
		case ops[i].Code == wire.OpGet:
			results[i] = wire.Result{Status: wire.StatusUnavail}
		default:
			results[i] = wire.Result{Status: wire.StatusUnknown}
		}
	}
	if errors.Is(err, ErrUnavailable) || errors.Is(err, ErrClosed) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}
