package membership

import (
	"fmt"
	"slices"
	"time"

	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// Moved is one replica move that completed.
type Moved struct {
	Shard    int    // a data shard, or the meta shard number
	Name     string // "shard N" or "the meta group"
	From, To string
	Took     time.Duration
	// CatchUp is how long the new replica took to apply what was
	// committed when it was added (snapshot and log).
	CatchUp time.Duration
	// Keys is how many keys the new replica held once caught up.
	Keys int
}

// Move moves shard sh's replica on from to to (see the package comment
// for the steps), and returns the map after it.
func (c *Driver) Move(sh int, from, to string) (*shard.Map, Moved, error) {
	start := time.Now()
	mv := Moved{Shard: sh, From: from, To: to}
	m, err := c.Map()
	if err != nil {
		return nil, mv, err
	}
	mv.Name = shardName(m, sh)
	if sh < 0 || sh > wire.MetaShard(m.Shards) {
		return m, mv, fmt.Errorf("membership: no shard %d (shards 0 to %d, meta %d)", sh, m.Shards-1, m.Shards)
	}
	name := shardName(m, sh)
	reps := m.Replicas(sh)
	switch {
	case !slices.Contains(reps, from):
		return m, mv, fmt.Errorf("membership: %s has no replica on %s (replicas %v)", name, from, reps)
	case slices.Contains(reps, to):
		return m, mv, fmt.Errorf("membership: %s already has a replica on %s", name, to)
	case !slices.Contains(m.Servers, to):
		return m, mv, fmt.Errorf("membership: %s is not a member; add-server it first", to)
	}
	// 1. An empty replica on to, once an earlier move's close of one
	// there (in the background) is done.
	c.awaitClose(sh, to)
	if _, err := c.call(to, wire.MembershipRequest{Op: wire.OpenReplica, Shard: sh, Peers: reps}); err != nil {
		return m, mv, fmt.Errorf("membership: opening %s on %s: %w", name, to, err)
	}
	// 2. A learner: it gets the snapshot and the log, without a vote.
	_, added, err := c.atLeader(reps, wire.MembershipRequest{Op: wire.AddLearner, Shard: sh, Addr: to})
	if err != nil {
		c.rollBack(m, sh, to)
		return m, mv, err
	}
	c.say("%s: %s added as a learner (leader commit %d)", name, to, added.Commit)
	var early *shard.Map
	if c.PlantEarlySwitch {
		early = m.WithReplicas(sh, append([]string{to}, slices.DeleteFunc(slices.Clone(reps), func(r string) bool { return r == from })...))
		if err := c.commit(m, early); err != nil {
			return m, mv, err
		}
	}
	// 3. Caught up, then a voter.
	caught := time.Now()
	keys, err := c.awaitCatchUp(sh, to, added.Commit)
	if err != nil {
		c.rollBack(m, sh, to)
		return m, mv, err
	}
	mv.CatchUp, mv.Keys = time.Since(caught), keys
	c.say("%s: %s caught up in %v (%d keys)", name, to, mv.CatchUp.Round(time.Millisecond), keys)
	candidates := append(slices.Clone(reps), to)
	leader, _, err := c.atLeader(candidates, wire.MembershipRequest{Op: wire.Promote, Shard: sh, Addr: to})
	if err != nil {
		c.rollBack(m, sh, to)
		return m, mv, err
	}
	c.say("%s: %s is a voter", name, to)
	// 4. The new placement has to in from's place; from must not lead.
	next := slices.Clone(reps)
	next[slices.Index(next, from)] = to
	if leader == from {
		// To the preferred replica, unless it is down (from may lead
		// because it is); then to the new one, which has just caught
		// up. The leader hands leadership back to the preferred replica
		// once that one is back (leadership.watchHandBack).
		target := next[0]
		if target != to {
			if down, _ := c.probe([]string{target}); down[target] {
				c.say("%s: %s, the preferred replica, does not answer: leadership goes to %s", name, target, to)
				target = to
			}
		}
		_, _, err := c.atLeader(candidates, wire.MembershipRequest{Op: wire.TransferLeader, Shard: sh, Addr: target})
		if err != nil && target != to {
			// The leader may not reach it though the driver does.
			c.say("%s: handing leadership to %s: %v; to %s instead", name, target, err, to)
			target = to
			_, _, err = c.atLeader(candidates, wire.MembershipRequest{Op: wire.TransferLeader, Shard: sh, Addr: target})
		}
		if err != nil {
			return m, mv, fmt.Errorf("membership: %s: moving leadership off %s: %w (run rebalance to finish)", name, from, err)
		}
		c.say("%s: leadership handed to %s", name, target)
	}
	// 5. from leaves the group.
	if _, _, err := c.atLeader(next, wire.MembershipRequest{Op: wire.RemoveMember, Shard: sh, Addr: from}); err != nil {
		return m, mv, fmt.Errorf("membership: %s: removing %s: %w (run rebalance to finish)", name, from, err)
	}
	c.say("%s: %s removed from the group", name, from)
	// 6. The map follows the group.
	nm := early
	if nm == nil {
		if nm, err = c.commitPlacement(sh, next); err != nil {
			return m, mv, fmt.Errorf("membership: %s: committing the map: %w (run rebalance to finish)", name, err)
		}
	}
	// 7. from lets go of its copy, off the critical path.
	c.closing(sh, from, func() {
		if _, err := c.call(from, wire.MembershipRequest{Op: wire.CloseReplica, Shard: sh, Map: nm.Wire()}); err != nil {
			c.say("%s: %s did not close its replica (%v); rebalance closes it later", name, from, err)
		}
	})
	mv.Took = time.Since(start)
	c.say("%s: moved %s -> %s in %v (map epoch %d)", name, from, to, mv.Took.Round(time.Millisecond), nm.Epoch)
	return nm, mv, nil
}

// catchUpPoll is how often a new replica's progress is read, and downFor
// how long it may not answer before its move is rolled back.
const (
	catchUpPoll = 50 * time.Millisecond
	downFor     = 15 * time.Second
)

// awaitCatchUp waits until the replica of sh on addr has applied index
// target, and returns how many keys it then holds.
func (c *Driver) awaitCatchUp(sh int, addr string, target uint64) (int, error) {
	deadline := time.Now().Add(c.catchUp())
	lastAnswer := time.Now()
	for {
		st, err := c.status(addr)
		if err != nil && time.Since(lastAnswer) > downFor {
			return 0, fmt.Errorf("membership: %s has not answered for %v while catching up shard %d: %w", addr, downFor, sh, err)
		}
		if err == nil {
			lastAnswer = time.Now()
			for _, s := range st.Shards {
				if s.Shard == sh && s.Applied >= target {
					return s.Keys, nil
				}
			}
			if sh == len(st.Layout.Placement) { // the meta group is not in Status
				rep, err := c.call(addr, wire.MembershipRequest{Op: wire.Members, Shard: sh})
				if err == nil && rep.Applied >= target {
					return 1, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("membership: the replica of shard %d on %s did not catch up to index %d within %v", sh, addr, target, c.catchUp())
		}
		time.Sleep(catchUpPoll)
	}
}

// rollBack undoes a move that failed before its new replica became a
// voter: the replica leaves the group, and once the leader no longer
// lists it, it closes. A replica the group still lists (its removal
// failed, or it already votes) keeps its data: closing it would take a
// member's log away.
func (c *Driver) rollBack(m *shard.Map, sh int, to string) {
	name := shardName(m, sh)
	reps := m.Replicas(sh)
	if _, _, err := c.atLeader(reps, wire.MembershipRequest{Op: wire.RemoveMember, Shard: sh, Addr: to}); err != nil {
		c.say("%s: rolling back %s: its removal failed (%v); the next reconcile retries", name, to, err)
		return
	}
	_, rep, err := c.members(m, sh)
	if err != nil || slices.ContainsFunc(rep.Members, func(mb wire.Member) bool { return mb.Addr == to }) {
		c.say("%s: rolling back %s: the group may still list it; its data stays", name, to)
		return
	}
	if _, err := c.call(to, wire.MembershipRequest{Op: wire.CloseReplica, Shard: sh, Map: m.Wire()}); err != nil {
		c.say("%s: rolled back: %s left the group, but did not close its replica (%v); reconcile closes it", name, to, err)
		return
	}
	c.say("%s: rolled back: %s left the group", name, to)
}
