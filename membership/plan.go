package membership

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// Summary is what a membership command did.
type Summary struct {
	Moves   []Moved       // the replica moves that completed
	Leaders int           // leaderships handed over to even them out
	Epoch   uint64        // the map's epoch after the last leader change (0 if none)
	Took    time.Duration // from the command's start to its end
}

// KeysCopied returns the keys that the moves' new replicas held once
// caught up.
func (s Summary) KeysCopied() int {
	n := 0
	for _, mv := range s.Moves {
		n += mv.Keys
	}
	return n
}

// AddServer makes addr, a server started with -join, a member, then
// rebalances replicas and leaders onto it (as Rebalance does: members
// that do not answer get nothing, and give first).
func (c *Driver) AddServer(addr string) (Summary, error) {
	start := time.Now()
	if err := c.Reconcile(); err != nil {
		return Summary{}, err
	}
	if err := c.AddMember(addr); err != nil {
		return Summary{}, err
	}
	sum, err := c.rebalance()
	sum.Took = time.Since(start)
	return sum, err
}

// AddMember makes addr, a server started with -join, a member that
// holds no replica yet: the first step of AddServer.
func (c *Driver) AddMember(addr string) error {
	m, err := c.Map()
	if err != nil {
		return err
	}
	if slices.Contains(m.Servers, addr) {
		return nil
	}
	l, err := c.layout(addr)
	switch {
	case err != nil:
		return fmt.Errorf("membership: %s does not answer: %w", addr, err)
	case l.Epoch == 0 || l.Shards != m.Shards:
		return fmt.Errorf("membership: %s is not a replicated server of this cluster (start it with -join): it answers a map of epoch %d and %d shards, where this cluster has %d shards",
			addr, l.Epoch, l.Shards, m.Shards)
	}
	next := m.Clone()
	next.Servers = append(next.Servers, addr)
	if err := c.commit(m, next); err != nil {
		return err
	}
	c.say("%s is a member (map epoch %d)", addr, next.Epoch)
	return nil
}

// RemoveServer moves every replica off addr (its shards' and the meta
// group's), then takes it out of the members. addr may be dead: its
// shards still have a majority elsewhere. No replica goes to a member
// that does not answer (ProbeWait); if one of addr's could only go to
// such a member, it refuses before it changes anything.
func (c *Driver) RemoveServer(addr string) (Summary, error) {
	start := time.Now()
	m, err := c.reconciledMap()
	if err != nil {
		return Summary{}, err
	}
	if !slices.Contains(m.Servers, addr) {
		return Summary{}, fmt.Errorf("membership: %s is not a member", addr)
	}
	if len(m.Servers)-1 < m.RF {
		return Summary{}, fmt.Errorf("membership: removing %s would leave %d servers for %d replicas of each shard: replace it with a new server (kvsctl replace-server %s NEW)",
			addr, len(m.Servers)-1, m.RF, addr)
	}
	down := c.downMembers(m)
	plan := m.Clone()
	var moves []planned
	for {
		sh, to, ok := drainStep(plan, addr, down)
		if !ok {
			break
		}
		plan = plan.WithReplicas(sh, replace(plan.Replicas(sh), addr, to))
		moves = append(moves, planned{sh, addr, to})
	}
	if left := groupsOn(plan, addr); len(left) > 0 {
		var lacking []string // the members down that could take one
		for s := range down {
			if s != addr && slices.ContainsFunc(left, func(sh int) bool { return !slices.Contains(plan.Replicas(sh), s) }) {
				lacking = append(lacking, s)
			}
		}
		slices.Sort(lacking)
		return Summary{}, fmt.Errorf("membership: %s holds replicas of %d groups that no live member lacks (down: %s): start those members again, or replace %s with a new server (kvsctl replace-server %s NEW)",
			addr, len(left), strings.Join(lacking, ", "), addr, addr)
	}
	sum, err := c.moveOff(m, addr, moves, down)
	sum.Took = time.Since(start)
	return sum, err
}

// ReplaceServer moves every replica on addr, its shards' and the meta
// group's, to with, a server started with -join, then takes addr out of
// the members. addr may be dead. Each replica moves once, where AddServer
// then RemoveServer may move one off a live server that the removal then
// moves back; a new server takes addr's share, so the replicas stay as
// even as they were (a member that holds replicas already takes addr's
// on top of its own: Rebalance evens them out). Run again after a
// failure, it moves what is left, or, once addr is out of the members,
// evens out the leaders.
func (c *Driver) ReplaceServer(addr, with string) (Summary, error) {
	start := time.Now()
	m, err := c.reconciledMap()
	if err != nil {
		return Summary{}, err
	}
	switch {
	case addr == with:
		return Summary{}, fmt.Errorf("membership: %s cannot replace itself", addr)
	case !slices.Contains(m.Servers, addr) && slices.Contains(m.Servers, with):
		// A run that failed after its last move: what is left is the
		// leaders.
		c.say("%s is no longer a member and %s is: evening out leaders", addr, with)
		sum, err := c.balanceLeaders(m, c.downMembers(m))
		sum.Took = time.Since(start)
		return sum, err
	case !slices.Contains(m.Servers, addr):
		return Summary{}, fmt.Errorf("membership: %s is not a member", addr)
	}
	for _, sh := range groupsOn(m, addr) {
		if slices.Contains(m.Replicas(sh), with) {
			return Summary{}, fmt.Errorf("membership: %s holds a replica of %s, as %s does: replace a server with a new one (or use remove-server)", with, shardName(m, sh), addr)
		}
	}
	if n := replicaCounts(m)[with]; n > 0 {
		c.say("%s holds %d replicas already: it takes %s's on top (kvsctl rebalance evens them out)", with, n, addr)
	}
	if err := c.AddMember(with); err != nil {
		return Summary{}, err
	}
	if m, err = c.Map(); err != nil {
		return Summary{}, err
	}
	var moves []planned
	for _, sh := range groupsOn(m, addr) {
		moves = append(moves, planned{sh, addr, with})
	}
	sum, err := c.moveOff(m, addr, moves, c.downMembers(m))
	sum.Took = time.Since(start)
	return sum, err
}

// groupsOn returns the groups of m with a replica on addr, in order: its
// data shards, then the meta group (as m.Shards).
func groupsOn(m *shard.Map, addr string) []int {
	var out []int
	for sh := range m.Shards + 1 {
		if slices.Contains(m.Replicas(sh), addr) {
			out = append(out, sh)
		}
	}
	return out
}

// moveOff makes moves, every replica on addr to another member, then
// takes addr out of m's members and evens out preferred leaders among the
// members not down.
func (c *Driver) moveOff(m *shard.Map, addr string, moves []planned, down map[string]bool) (Summary, error) {
	var sum Summary
	// The meta group's move last, alone: every other move commits the
	// map through it.
	meta := slices.IndexFunc(moves, func(p planned) bool { return p.shard == m.Shards })
	var metaMove []planned
	if meta >= 0 {
		metaMove = []planned{moves[meta]}
		moves = slices.Delete(moves, meta, meta+1)
	}
	c.say("%d replica moves planned off %s, up to %d at once", len(moves)+len(metaMove), addr, c.parallel())
	for _, batch := range [][]planned{moves, metaMove} {
		done, err := c.runMoves(batch)
		sum.Moves = append(sum.Moves, done...)
		if err != nil {
			return sum, err
		}
	}
	m, err := c.Map()
	if err != nil {
		return sum, err
	}
	next := m.Clone()
	next.Servers = slices.DeleteFunc(next.Servers, func(s string) bool { return s == addr })
	if err := c.commit(m, next); err != nil {
		return sum, err
	}
	c.say("%s is no longer a member (map epoch %d); it may be stopped", addr, next.Epoch)
	lsum, err := c.balanceLeaders(next, down)
	sum.Leaders, sum.Epoch = lsum.Leaders, lsum.Epoch
	return sum, err
}

// reconciledMap finishes what a driver that stopped half way left
// (Reconcile), then returns the map.
func (c *Driver) reconciledMap() (*shard.Map, error) {
	if err := c.Reconcile(); err != nil {
		return nil, err
	}
	return c.Map()
}

// Rebalance moves replicas until every server holds its share of them
// (within one), then evens out preferred leaders the same way. It plans
// every move from the current map, then makes up to Parallel of them at
// once (moves of one shard one after another). A member that does not
// answer (ProbeWait) gets no replica and no preferred leadership, and
// gives its own first while it holds more than a live member plus one.
func (c *Driver) Rebalance() (Summary, error) {
	start := time.Now()
	if err := c.Reconcile(); err != nil {
		return Summary{}, err
	}
	sum, err := c.rebalance()
	sum.Took = time.Since(start)
	return sum, err
}

// rebalance is Rebalance without the Reconcile first.
func (c *Driver) rebalance() (Summary, error) {
	start := time.Now()
	var sum Summary
	m, err := c.Map()
	if err != nil {
		return sum, err
	}
	down := c.downMembers(m)
	plan := m.Clone()
	var moves []planned
	for {
		sh, from, to, ok := balanceStep(plan, down)
		if !ok {
			break
		}
		plan = plan.WithReplicas(sh, replace(plan.Placement[sh], from, to))
		moves = append(moves, planned{sh, from, to})
	}
	if len(moves) > 0 {
		c.say("%d replica moves planned, up to %d at once", len(moves), c.parallel())
	}
	done, err := c.runMoves(moves)
	sum.Moves = done
	if err != nil {
		return sum, err
	}
	if m, err = c.Map(); err != nil {
		return sum, err
	}
	lsum, err := c.balanceLeaders(m, down)
	sum.Leaders, sum.Epoch, sum.Took = lsum.Leaders, lsum.Epoch, time.Since(start)
	return sum, err
}

// planned is one replica move of a plan.
type planned struct {
	shard    int
	from, to string
}

// DefaultParallel is how many moves Rebalance makes at once.
const DefaultParallel = 4

func (c *Driver) parallel() int {
	if c.Parallel > 0 {
		return c.Parallel
	}
	return DefaultParallel
}

// runMoves makes moves, up to parallel() at once and one shard's in
// order, and stops starting new ones after the first failure.
func (c *Driver) runMoves(moves []planned) ([]Moved, error) {
	var (
		mu     sync.Mutex
		done   []Moved
		errs   []error
		shards = map[int]*sync.Mutex{}
		slots  = make(chan struct{}, c.parallel())
		wg     sync.WaitGroup
	)
	for _, mv := range moves {
		if shards[mv.shard] == nil {
			shards[mv.shard] = &sync.Mutex{}
		}
	}
	for _, mv := range moves {
		mu.Lock()
		failed := len(errs) > 0
		mu.Unlock()
		if failed {
			break
		}
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			lock := shards[mv.shard]
			lock.Lock()
			defer lock.Unlock()
			_, moved, err := c.Move(mv.shard, mv.from, mv.to)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			done = append(done, moved)
		}()
	}
	wg.Wait()
	return done, errors.Join(errs...)
}

// replace returns reps with from replaced by to.
func replace(reps []string, from, to string) []string {
	out := slices.Clone(reps)
	if i := slices.Index(out, from); i >= 0 {
		out[i] = to
	}
	return out
}

// handOverGap separates the leadership hand-overs of balanceLeaders.
const handOverGap = 500 * time.Millisecond

// balanceLeaders makes each server not down the preferred leader of its
// share of shards (within one), and hands each changed shard's leadership
// to it.
func (c *Driver) balanceLeaders(m *shard.Map, down map[string]bool) (Summary, error) {
	sum := Summary{Epoch: m.Epoch}
	next := m.Clone()
	var changed []int
	for {
		sh, to, ok := leaderStep(next, down)
		if !ok {
			break
		}
		reps := next.Placement[sh]
		i := slices.Index(reps, to)
		reps[0], reps[i] = reps[i], reps[0]
		changed = append(changed, sh)
	}
	if len(changed) == 0 {
		return sum, nil
	}
	if err := c.commit(m, next); err != nil {
		return sum, err
	}
	for i, sh := range slices.Compact(slices.Sorted(slices.Values(changed))) {
		if i > 0 {
			// Each hand-over pauses its shard for a moment; a client batch
			// that spans every shard waits for the slowest, so hand-overs
			// back to back would add up into one long stall.
			time.Sleep(handOverGap)
		}
		to := next.Placement[sh][0]
		if _, _, err := c.atLeader(next.Placement[sh], wire.MembershipRequest{Op: wire.TransferLeader, Shard: sh, Addr: to}); err != nil {
			c.say("shard %d: handing leadership to %s: %v (its hand-back will)", sh, to, err)
			continue
		}
		sum.Leaders++
	}
	c.say("preferred leaders evened out: %d shards changed (map epoch %d)", len(changed), next.Epoch)
	sum.Epoch = next.Epoch
	return sum, nil
}

// Reconcile makes the map agree with the shards' Raft groups after a
// move that stopped half way: a learner left behind leaves its group, a
// group whose voters differ from the map's placement has the map follow
// it, and servers close replicas the map no longer places on them.
func (c *Driver) Reconcile() error {
	m, err := c.Map()
	if err != nil {
		return err
	}
	next := m.Clone()
	// Every group's configuration, asked of all leaders at once.
	reps := make([]wire.MembershipReply, m.Shards+1)
	errs := make([]error, m.Shards+1)
	var wg sync.WaitGroup
	for sh := range reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, reps[sh], errs[sh] = c.members(m, sh)
		}()
	}
	wg.Wait()
	for sh := 0; sh <= m.Shards; sh++ {
		placed, rep, err := m.Replicas(sh), reps[sh], errs[sh]
		if err != nil {
			c.say("%s: no leader to reconcile with (%v)", shardName(m, sh), err)
			continue
		}
		var voters []string
		for _, mb := range rep.Members {
			if mb.Voter {
				voters = append(voters, mb.Addr)
				continue
			}
			c.say("%s: removing the learner %s left by an unfinished move", shardName(m, sh), mb.Addr)
			c.rollBack(m, sh, mb.Addr)
		}
		if len(voters) > m.RF {
			// A move stopped between making its new replica a voter and
			// removing the old one: undo it (the planner makes it again).
			for _, v := range voters {
				if !slices.Contains(placed, v) {
					c.say("%s: removing %s, a voter the map does not place there, left by an unfinished move", shardName(m, sh), v)
					c.rollBack(m, sh, v)
				}
			}
			continue
		}
		if sameSet(voters, placed) || len(voters) != m.RF {
			continue
		}
		// Keep the map's order for replicas that stay; new ones follow.
		var follow []string
		for _, r := range placed {
			if slices.Contains(voters, r) {
				follow = append(follow, r)
			}
		}
		for _, v := range voters {
			if !slices.Contains(follow, v) {
				follow = append(follow, v)
			}
		}
		c.say("%s: the map said %v, the group has %v: the map follows the group", shardName(m, sh), placed, follow)
		next = next.WithReplicas(sh, follow)
	}
	if err := next.Validate(); err == nil && !mapsEqual(m, next) {
		if err := c.commit(m, next); err != nil {
			return err
		}
		m = next
	}
	// A replica its group still lists keeps its data, whatever the map
	// says; so does every replica of a group whose leader did not answer.
	keep := func(sh int, addr string) bool {
		return errs[sh] != nil || slices.ContainsFunc(reps[sh].Members, func(mb wire.Member) bool { return mb.Addr == addr })
	}
	c.closeStrays(m, keep)
	return nil
}

// closeStrays asks every member to close the replicas (of data shards,
// and of the meta group) that m does not place on it and keep does not
// keep.
func (c *Driver) closeStrays(m *shard.Map, keep func(sh int, addr string) bool) {
	for _, addr := range m.Servers {
		st, err := c.status(addr)
		if err != nil {
			continue
		}
		// Status lists data shards only: ask for the meta group's replica.
		if meta := m.Shards; !slices.Contains(m.Meta, addr) && !keep(meta, addr) {
			rep, err := c.call(addr, wire.MembershipRequest{Op: wire.Members, Shard: meta})
			if err == nil && rep.State != "" {
				if _, err := c.call(addr, wire.MembershipRequest{Op: wire.CloseReplica, Shard: meta, Map: m.Wire()}); err == nil {
					c.say("the meta group: %s closed a replica the map does not place there", addr)
				}
			}
		}
		for _, s := range st.Shards {
			if s.Shard < m.Shards && !slices.Contains(m.Placement[s.Shard], addr) && !keep(s.Shard, addr) {
				if _, err := c.call(addr, wire.MembershipRequest{Op: wire.CloseReplica, Shard: s.Shard, Map: m.Wire()}); err == nil {
					c.say("shard %d: %s closed a replica the map does not place there", s.Shard, addr)
				}
			}
		}
	}
}

func sameSet(a, b []string) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(x string) bool { return !slices.Contains(b, x) })
}

func mapsEqual(a, b *shard.Map) bool {
	if !slices.Equal(a.Servers, b.Servers) || !slices.Equal(a.Meta, b.Meta) {
		return false
	}
	for s := range a.Placement {
		if !slices.Equal(a.Placement[s], b.Placement[s]) {
			return false
		}
	}
	return true
}
