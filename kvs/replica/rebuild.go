package replica

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/batchkv/batchkv/kvs/replica/raftstore"
	"github.com/batchkv/batchkv/kvs/replica/transport"
)

// A replica that finds its data damaged (raftstore.Open's checks when it opens,
// or a checksum that fails while it runs) does not serve it. When the
// shard has other replicas, this server wipes its copy, keeping only its
// term and vote, and opens it again empty: the shard's leader, which
// still counts it a voter, finds its log empty and sends it a snapshot
// and the entries after it. Until its new log reaches the last index the
// damaged one had, it refuses every vote, pre-vote and TimeoutNow: a
// replica that lost entries it had acknowledged could otherwise elect a
// leader that lacks them. A shard with no other replica cannot be
// rebuilt: the server refuses to open it.

// damagedError is a replica that did not open because its data is
// damaged, with what it keeps if it is rebuilt.
type damagedError struct {
	shard int
	err   error
	kept  raftstore.Kept
}

func (e *damagedError) Error() string {
	return fmt.Sprintf("replica: shard %d: %v", e.shard, e.err)
}

func (e *damagedError) Unwrap() error { return e.err }

// rebuildPoll is how often a replica being rebuilt checks its progress.
const rebuildPoll = 100 * time.Millisecond

// watchRebuild ends the rebuild once the replica's log reaches target,
// the last index its damaged log had; or, when the shard's log has not
// reached target since (the damaged log's tail was never committed, and
// was replaced), once it has applied everything its leader committed and
// stayed so for three heartbeat timeouts.
func (g *Group) watchRebuild(target uint64) {
	defer g.wg.Done()
	tick := time.NewTicker(rebuildPoll)
	defer tick.Stop()
	var steadySince time.Time
	for {
		select {
		case <-g.stop:
			return
		case <-tick.C:
		}
		applied, last := g.raft.AppliedIndex(), g.raft.LastIndex()
		done := applied >= target && applied > 0
		if !done && applied > 0 && applied == last && g.raft.CommitIndex() == applied && g.LeaderHint() != "" {
			if steadySince.IsZero() {
				steadySince = time.Now()
			}
			done = time.Since(steadySince) >= 3*g.heartbeat
		} else {
			steadySince = time.Time{}
		}
		if !done {
			continue
		}
		if err := raftstore.EndRebuild(g.dir); err != nil {
			g.log.Error("the rebuilt replica's mark stays; it keeps refusing votes", "err", err)
			return
		}
		g.rebuilding.Store(false)
		g.log.Warn("replica rebuilt from its peers", "applied", applied, "damaged_log_last", target,
			"snapshots_restored", g.fsm.Restores())
		return
	}
}

// Rebuilding reports whether the replica is being rebuilt from its
// peers after damage.
func (g *Group) Rebuilding() bool { return g.rebuilding.Load() }

// openOrRebuild opens the replica of shard sh (openLocked's work); a
// replica whose data is damaged is rebuilt from its peers, or refused
// when it has none.
func (s *Set) openOrRebuild(gc groupConfig) (*Group, error) {
	g, err := openGroup(gc)
	var dmg *damagedError
	if !errors.As(err, &dmg) {
		return g, err
	}
	if !s.rebuildable(gc.replicas) {
		return nil, fmt.Errorf("%w; the shard has no other replica to rebuild it from: restore %s from a backup, or move it away to start the shard empty",
			dmg, gc.dir)
	}
	s.cfg.Logger.Error("replica data damaged: not serving it; wiping it and rebuilding it from its peers",
		"shard", gc.shard, "err", dmg.err, "term_and_vote_kept", dmg.kept.Known, "damaged_log_last", dmg.kept.Last)
	if err := raftstore.WipeForRebuild(gc.dir, gc.logFormat, dmg.kept, transport.NewRaftLogger(s.cfg.Logger)); err != nil {
		return nil, fmt.Errorf("replica: shard %d: wiping the damaged replica: %w", gc.shard, err)
	}
	gc.join = true
	return openGroup(gc)
}

// rebuildable says whether a replica placed on replicas has a peer to
// rebuild it from.
func (s *Set) rebuildable(replicas []string) bool {
	return s.cfg.DataDir != "" && slices.ContainsFunc(replicas, func(r string) bool { return r != s.cfg.Self })
}

// damaged handles damage that the replica g of shard sh found while it
// ran: it closes g and opens it again, which finds the damage and
// rebuilds the replica (openOrRebuild); with no peer to rebuild from,
// the shard stays closed and Config.Fatal is called.
func (s *Set) damaged(sh int, g *Group, found error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || g == nil || s.GroupOf(sh) != g {
		return // closed, or already reopened
	}
	s.cfg.Logger.Error("replica data damaged while running: not serving it", "shard", sh, "err", found)
	groups := slices.Clone(*s.groups.Load())
	groups[sh] = nil
	s.groups.Store(&groups)
	_ = g.raft.Shutdown().Error()
	kept := raftstore.KeepState(g.logs)
	reps := g.Placement()
	_ = g.close()
	if !s.rebuildable(reps) {
		if s.cfg.Fatal != nil {
			s.cfg.Fatal(fmt.Errorf("replica: shard %d has no other replica to rebuild it from: %w", sh, found))
		}
		return
	}
	if err := raftstore.WipeForRebuild(g.dir, s.cfg.LogFormat, kept, transport.NewRaftLogger(s.cfg.Logger)); err != nil {
		s.cfg.Logger.Error("wiping the damaged replica failed; the shard stays closed here", "shard", sh, "err", err)
		return
	}
	if err := s.openLocked(sh, reps, true); err != nil {
		s.cfg.Logger.Error("reopening the damaged replica failed; the shard stays closed here", "shard", sh, "err", err)
	}
}
