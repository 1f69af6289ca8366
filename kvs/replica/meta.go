package replica

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/kvs/replica/durablefs"
	"github.com/batchkv/batchkv/kvs/replica/mapfile"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// The meta group is a Raft group like a shard's, on the replicas the map
// names in Meta. Its store holds one key, metaKey, whose value is the
// current map in JSON. The initial map (epoch 1) is implied, not stored:
// every initial server computes it from its flags.
const metaKey = "map"

// ReadMap returns the map the meta group holds. It must be called at the
// meta group's leader; ErrNotLeader otherwise.
func (s *Set) ReadMap() (*shard.Map, error) {
	g := s.Meta()
	if g == nil {
		return nil, ErrNotLeader
	}
	if err := g.ReadBarrier(); err != nil {
		return nil, err
	}
	m, err := s.StoredMap()
	if err != nil || m != nil {
		return m, err
	}
	if s.initial == nil {
		return nil, errors.New("replica: the meta group holds no map and this server has no initial one")
	}
	return s.initial, nil
}

// StoredMap returns the map this server's replica of the meta group has
// applied (no barrier: it may be behind the leader's, never ahead of what
// the group committed), or nil if it hosts no meta replica or its replica
// holds no map yet.
func (s *Set) StoredMap() (*shard.Map, error) {
	g := s.Meta()
	if g == nil {
		return nil, nil
	}
	raw, ok := g.Store().AppendGet(nil, metaKey)
	if !ok {
		return nil, nil
	}
	var l wire.ClusterMap
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("replica: the meta group's map: %w", err)
	}
	return shard.FromWire(l)
}

// mapEntry is the meta group's log entry that stores m under metaKey.
func mapEntry(m *shard.Map) ([]byte, error) {
	raw, err := json.Marshal(m.Wire())
	if err != nil {
		return nil, err
	}
	return wire.AppendBatchArgs(nil, &wire.BatchArgs{Ops: []wire.Op{{Code: wire.OpPut, Key: metaKey, Value: string(raw)}}}), nil
}

// CommitMap stores next in the meta group if the map it holds has epoch
// expect (compare and set), and adopts it here. next must have epoch
// expect+1. It must be called at the meta group's leader.
func (s *Set) CommitMap(expect uint64, next *shard.Map) (*shard.Map, error) {
	s.metaMu.Lock()
	defer s.metaMu.Unlock()
	g := s.Meta()
	if g == nil {
		return nil, ErrNotLeader
	}
	term := g.raft.CurrentTerm()
	cur, err := s.ReadMap()
	if err != nil {
		return nil, err
	}
	if cur.Epoch != expect {
		return cur, fmt.Errorf("%w: epoch %d, expected %d", ErrEpoch, cur.Epoch, expect)
	}
	if next.Epoch != expect+1 {
		return cur, fmt.Errorf("replica: next map has epoch %d, want %d", next.Epoch, expect+1)
	}
	if err := s.compatible(next); err != nil {
		return cur, err
	}
	entry, err := mapEntry(next)
	if err != nil {
		return cur, err
	}
	if _, err := g.Write(entry, ApplyTimeout); err != nil {
		return cur, err
	}
	// Read, check and write all in one term: no other leader can have
	// written between them.
	if g.raft.CurrentTerm() != term {
		return cur, fmt.Errorf("%w: the meta group's term moved during the change; its outcome is unknown", ErrNotLeader)
	}
	return next, s.Adopt(next)
}

// Adopt makes m this server's map if it is newer than the one it has:
// it saves it, updates the placement of its replicas, and opens the
// replicas m places here that it lacks (they wait for their leader to
// send them the shard). Replicas m no longer places here keep running
// until CloseReplica: the move that took them out closes them.
func (s *Set) Adopt(m *shard.Map) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("replica: closed")
	}
	if m.Epoch <= s.Map().Epoch {
		return nil
	}
	if err := s.compatible(m); err != nil {
		return err
	}
	if err := mapfile.Save(s.cfg.DataDir, m); err != nil {
		return err
	}
	s.m.Store(m)
	var errs []error
	place := func(sh int, reps []string) {
		g := s.GroupOf(sh)
		switch {
		case g != nil:
			g.SetPlacement(reps)
		case slices.Contains(reps, s.cfg.Self):
			errs = append(errs, s.openLocked(sh, reps, true))
		}
	}
	for sh := 0; sh <= m.Shards; sh++ {
		place(sh, m.Replicas(sh))
	}
	return errors.Join(errs...)
}

// OpenReplica starts a replica of shard sh (or the meta group) here that
// its leader will add: it accepts Raft connections from peers, and gets
// the shard by snapshot. It does nothing if one is open.
func (s *Set) OpenReplica(sh int, peers []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("replica: closed")
	}
	if sh < 0 || sh > s.layout.Shards() {
		return fmt.Errorf("%w: shard %d", ErrNoSuchShard, sh)
	}
	if s.GroupOf(sh) != nil {
		return nil
	}
	if !slices.Contains(peers, s.cfg.Self) {
		peers = append(slices.Clone(peers), s.cfg.Self)
	}
	return s.openLocked(sh, peers, true)
}

// CloseReplica stops this server's replica of shard sh (or the meta
// group) and deletes its data. It refuses while the map places the shard
// here: a move takes the replica out of the map first.
func (s *Set) CloseReplica(sh int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("replica: closed")
	}
	m := s.Map()
	if slices.Contains(m.Replicas(sh), s.cfg.Self) {
		return fmt.Errorf("replica: the map (epoch %d) still places shard %d here", m.Epoch, sh)
	}
	g := s.GroupOf(sh)
	if g == nil {
		return nil
	}
	groups := slices.Clone(*s.groups.Load())
	groups[sh] = nil
	s.groups.Store(&groups)
	err := g.close()
	if g.dir == "" {
		return err
	}
	return errors.Join(err, durablefs.RemoveDirDurably(g.dir))
}

// seedFor bounds how long a reborn server waits to lead the meta group it
// bootstrapped, to write the map into it.
const seedFor = 10 * time.Second

// seedMeta writes m into the meta group this server bootstrapped when it
// was reborn, once it leads it, so that the map travels with the group's
// log and snapshots if the group moves (until then ReadMap answers m from
// s.initial). A map committed first is left as it is.
func (s *Set) seedMeta(m *shard.Map) {
	entry, err := mapEntry(m)
	if err != nil {
		return
	}
	for deadline := time.Now().Add(seedFor); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		s.metaMu.Lock()
		g := s.Meta()
		if g == nil || g.raft.State() == raft.Shutdown {
			s.metaMu.Unlock()
			return
		}
		if _, ok := g.Store().AppendGet(nil, metaKey); ok {
			s.metaMu.Unlock()
			return
		}
		if g.raft.State() == raft.Leader {
			_, err = g.Write(entry, ApplyTimeout)
			if err == nil {
				s.metaMu.Unlock()
				return
			}
		}
		s.metaMu.Unlock()
	}
	s.cfg.Logger.Warn("the reborn meta group's map was not written into it", "epoch", m.Epoch, "err", err)
}
