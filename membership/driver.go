// Package membership changes where a running replicated cluster keeps its
// shards: it adds and removes servers, moves one replica of a shard from
// one server to another, replaces one server with another, and evens out
// replicas and leaders. kvsctl's add-server, remove-server,
// replace-server, move, rebalance and map commands call it.
//
// A move of shard s from server A to server B, all while the shard
// serves:
//
//  1. B opens an empty replica of s that waits for the shard's leader;
//  2. the leader adds B to s's Raft group as a non-voter, and sends it a
//     snapshot and the log since (a learner does not count toward
//     commits, so a slow copy never stalls writes);
//  3. once B has applied everything committed when it was added, the
//     leader makes it a voter;
//  4. if A leads, it hands leadership to the new preferred replica (to
//     B if that one does not answer);
//  5. the leader takes A out of the group;
//  6. the meta group commits the next map (epoch + 1), with B in A's
//     place, and every server is told of it;
//  7. A closes its replica and deletes its data.
//
// The shard's data and its session table (exactly-once) travel inside the
// Raft group, so no acknowledged write can be lost or applied twice by a
// move; the map only tells clients and servers where to look, and a stale
// one costs a redirect (wire.StatusMoved), never a wrong answer. A move
// that fails before step 3 is rolled back (B leaves the group). One that
// fails later leaves work for the next Reconcile: a group with an extra
// voter loses the one the map does not name, and a map behind its group
// follows it.
package membership

import (
	"errors"
	"fmt"
	"net/rpc"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// Driver drives membership changes through the admin RPCs of a
// replicated cluster's servers. One Driver (one kvsctl) should change a
// cluster at a time; the meta group's compare-and-set on the epoch makes
// a second one fail rather than undo the first's changes.
type Driver struct {
	// Admin reaches the servers (its TLS config, if any).
	Admin client.Admin
	// Seeds are members to ask for the map first.
	Seeds []string
	// Progress, if set, receives one line per step.
	Progress func(line string)
	// CatchUp bounds how long a new replica may take to catch up before
	// its move is rolled back. Zero means DefaultCatchUp.
	CatchUp time.Duration
	// RPCTimeout bounds each admin call. Zero means 10 s.
	RPCTimeout time.Duration
	// Parallel is how many replica moves Rebalance makes at once; zero
	// means DefaultParallel.
	Parallel int
	pool     pool
	// leaders remembers who answered as each shard's leader last.
	leaders sync.Map
	// bg tracks work left running in the background (publishing maps,
	// closing moved-off replicas); closes holds a channel per (shard,
	// server) closing, closed when it is done.
	bg     sync.WaitGroup
	closes sync.Map
	// cache is the last map read or committed, and who led the meta
	// group then: where Map asks first.
	cache struct {
		sync.Mutex
		m *shard.Map
	}

	// PlantEarlySwitch plants a bug for the linearizability checker to
	// catch, in tests only: a move names the new replica the shard's
	// preferred one in the map as soon as it is added, before it has
	// caught up.
	PlantEarlySwitch bool
}

// DefaultCatchUp is how long a new replica may take to catch up.
const DefaultCatchUp = 2 * time.Minute

// retryFor bounds how long a step that needs a leader retries while the
// shard elects one.
const retryFor = 15 * time.Second

func (c *Driver) say(format string, args ...any) {
	if c.Progress != nil {
		c.Progress(fmt.Sprintf(format, args...))
	}
}

func (c *Driver) timeout() time.Duration {
	if c.RPCTimeout > 0 {
		return c.RPCTimeout
	}
	return 10 * time.Second
}

func (c *Driver) catchUp() time.Duration {
	if c.CatchUp > 0 {
		return c.CatchUp
	}
	return DefaultCatchUp
}

// call makes one membership op at addr.
func (c *Driver) call(addr string, req wire.MembershipRequest) (wire.MembershipReply, error) {
	return invokeFor[wire.MembershipReply](c, addr, wire.MembershipMethod, &req)
}

// refused reports whether err is a server's refusal of the caller's
// certificate, which no retry changes.
func refused(err error) bool {
	var se rpc.ServerError
	return errors.As(err, &se) && strings.Contains(string(se), wire.MembershipRefused)
}

// atLeader makes op at the leader of shard sh (or of the meta group),
// trying candidates in turn and following leader hints until one answers
// as leader, for up to retryFor.
func (c *Driver) atLeader(candidates []string, req wire.MembershipRequest) (string, wire.MembershipReply, error) {
	deadline := time.Now().Add(retryFor)
	var lastErr error
	next := slices.Clone(candidates)
	if l, ok := c.leaders.Load(req.Shard); ok && slices.Contains(next, l.(string)) {
		// Ask the last known leader first.
		next = append([]string{l.(string)}, slices.DeleteFunc(next, func(a string) bool { return a == l.(string) })...)
	}
	for i := 0; time.Now().Before(deadline); i++ {
		addr := next[i%len(next)]
		rep, err := c.call(addr, req)
		if err == nil && req.Op == wire.Members && rep.State != "Leader" {
			rep.NotLeader = true // any replica answers; we want the leader's view
		}
		switch {
		case refused(err):
			return "", wire.MembershipReply{}, err
		case err != nil:
			lastErr = err
		case rep.NotLeader:
			lastErr = fmt.Errorf("%s does not lead shard %d", addr, req.Shard)
			if rep.Leader != "" && rep.Leader != addr {
				if !slices.Contains(next, rep.Leader) {
					next = append(next, rep.Leader)
				}
				leader := rep.Leader
				rep, err = c.call(leader, req)
				if err == nil && !rep.NotLeader && (req.Op != wire.Members || rep.State == "Leader") {
					c.leaders.Store(req.Shard, leader)
					return leader, rep, nil
				}
			}
		default:
			c.leaders.Store(req.Shard, addr)
			return addr, rep, nil
		}
		if i%len(next) == len(next)-1 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	return "", wire.MembershipReply{}, fmt.Errorf("membership: %s of shard %d: no leader answered: %w", req.Op, req.Shard, lastErr)
}

// Map returns the cluster's current map, read at the meta group's leader.
func (c *Driver) Map() (*shard.Map, error) {
	c.cache.Lock()
	hint := c.cache.m
	c.cache.Unlock()
	if hint == nil {
		var errs []error
		for _, addr := range c.Seeds {
			l, err := c.layout(addr)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			m, err := shard.FromWire(l)
			switch {
			case l.Epoch == 0:
				errs = append(errs, fmt.Errorf("%s serves a cluster without a shard map: its members are fixed (to change them, start the servers with -rf above 1, -data-dir, or -in-memory)", addr))
			case err != nil:
				errs = append(errs, fmt.Errorf("%s: its shard map: %w", addr, err))
			case hint == nil || m.Epoch > hint.Epoch:
				hint = m
			}
		}
		if hint == nil {
			if len(errs) == 0 {
				return nil, errors.New("membership: no seed to ask for the shard map")
			}
			return nil, fmt.Errorf("membership: no shard map from %s: %w", strings.Join(c.Seeds, ","), errors.Join(errs...))
		}
	}
	_, rep, err := c.atLeader(hint.Meta, wire.MembershipRequest{Op: wire.ReadMap, Shard: wire.MetaShard(hint.Shards)})
	if err != nil {
		return nil, err
	}
	m, err := shard.FromWire(rep.Map)
	if err != nil {
		return nil, err
	}
	c.remember(m)
	return m, nil
}

// remember caches m unless a newer map is cached.
func (c *Driver) remember(m *shard.Map) {
	c.cache.Lock()
	defer c.cache.Unlock()
	if c.cache.m == nil || m.Epoch > c.cache.m.Epoch {
		c.cache.m = m
	}
}

// ErrStale says a map change was based on a map that another change
// replaced first.
var ErrStale = errors.New("membership: the map changed since it was read")

// commit makes next (epoch cur.Epoch+1) the cluster's map and tells every
// server of cur and next about it. It fails with ErrStale if the map is
// no longer cur.
func (c *Driver) commit(cur, next *shard.Map) error {
	next.Epoch = cur.Epoch + 1
	if err := next.Validate(); err != nil {
		return err
	}
	_, rep, err := c.atLeader(cur.Meta, wire.MembershipRequest{Op: wire.CommitMap, Shard: wire.MetaShard(cur.Shards),
		Expect: cur.Epoch, Map: next.Wire()})
	if err != nil {
		return err
	}
	if rep.Stale {
		return fmt.Errorf("%w (epoch %d, expected %d)", ErrStale, rep.Map.Epoch, cur.Epoch)
	}
	c.remember(next)
	c.background(func() { c.publish(next, cur.Servers) })
	return nil
}

// commitPlacement sets shard sh's replicas to reps in the current map,
// reading it again and retrying when a concurrent move committed first.
func (c *Driver) commitPlacement(sh int, reps []string) (*shard.Map, error) {
	var err error
	for attempt := 0; attempt < commitAttempts; attempt++ {
		var cur *shard.Map
		if cur, err = c.Map(); err != nil {
			return nil, err
		}
		if slices.Equal(cur.Replicas(sh), reps) {
			return cur, nil // an earlier attempt committed after all
		}
		next := cur.WithReplicas(sh, reps)
		if err = c.commit(cur, next); !errors.Is(err, ErrStale) {
			return next, err
		}
		time.Sleep(time.Duration(attempt+1) * 10 * time.Millisecond)
	}
	return nil, err
}

// commitAttempts bounds commitPlacement's compare-and-set retries.
const commitAttempts = 20

// background runs f off the moves' critical path; Close waits for it.
func (c *Driver) background(f func()) {
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		f()
	}()
}

// closing runs do, the closing of shard sh's replica on addr, in the
// background; awaitClose waits for it, so that a later move that opens a
// replica of sh on addr does not have the new one closed under it.
func (c *Driver) closing(sh int, addr string, do func()) {
	done := make(chan struct{})
	c.closes.Store(closeKey{sh, addr}, done)
	c.background(func() {
		defer close(done)
		do()
	})
}

func (c *Driver) awaitClose(sh int, addr string) {
	if done, ok := c.closes.Load(closeKey{sh, addr}); ok {
		<-done.(chan struct{})
	}
}

type closeKey struct {
	shard int
	addr  string
}

// publish gives m to its members and to others (best effort: a server
// that misses it learns it from the meta group within a second).
func (c *Driver) publish(m *shard.Map, others []string) {
	to := slices.Clone(m.Servers)
	for _, o := range others {
		if !slices.Contains(to, o) {
			to = append(to, o)
		}
	}
	done := make(chan struct{}, len(to))
	for _, addr := range to {
		c.background(func() {
			_, _ = c.call(addr, wire.MembershipRequest{Op: wire.PublishMap, Shard: 0, Map: m.Wire()})
			done <- struct{}{}
		})
	}
	// A server that is down or stopped must not hold up the move.
	wait := time.After(publishWait)
	for range to {
		select {
		case <-done:
		case <-wait:
			return
		}
	}
}

// publishWait bounds how long a commit waits for servers to take the new
// map; the rest learn it within a second from the meta group.
const publishWait = 2 * time.Second

// members returns shard sh's Raft configuration as its leader has it.
func (c *Driver) members(m *shard.Map, sh int) (leader string, rep wire.MembershipReply, err error) {
	return c.atLeader(m.Replicas(sh), wire.MembershipRequest{Op: wire.Members, Shard: sh})
}

// shardName names sh for progress lines.
func shardName(m *shard.Map, sh int) string {
	if sh == wire.MetaShard(m.Shards) {
		return "the meta group"
	}
	return fmt.Sprintf("shard %d", sh)
}
