package store

// Frozen is a point-in-time view of an Arena: what Range returns does not
// change however the store is written after Freeze, so a snapshot can be
// written out while writes go on. It holds the shards' tables and records
// as they were; the first write to each shard afterwards copies that
// shard's table (a few bytes per key), no write overwrites in place a
// record the view holds (a key overwritten while the view lives takes
// one more record, after which it is overwritten in place again), and no
// shard compacts until Release, so what the view reads never changes.
// Taking the view costs one lock per shard, not a copy of the data.
//
// A Frozen is safe for concurrent use with the store's writers; Release
// it once, after its last Range.
type Frozen struct {
	s      *Arena
	shards [arenaShards]frozenShard
}

type frozenShard struct {
	slots []uint64
	rec   records
	live  int
}

// Freezer is a Store that can take a point-in-time view of itself.
type Freezer interface {
	Store
	Freeze() *Frozen
}

// Freeze returns a point-in-time view of the store.
func (s *Arena) Freeze() *Frozen {
	s.freezeMu.Lock()
	defer s.freezeMu.Unlock()
	s.frozen++
	f := &Frozen{s: s}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		f.shards[i] = frozenShard{slots: sh.slots, rec: sh.rec.view(), live: sh.live}
		sh.slotsShared, sh.arenaShared, sh.viewEnd = true, true, sh.rec.end()
		sh.mu.Unlock()
	}
	return f
}

// Len returns the number of keys in the view.
func (f *Frozen) Len() int {
	n := 0
	for i := range f.shards {
		n += f.shards[i].live
	}
	return n
}

// Range calls fn for every key and value of the view until fn returns
// false. The arguments are valid only during the call.
func (f *Frozen) Range(fn func(key string, value []byte) bool) {
	for i := range f.shards {
		rec := &f.shards[i].rec
		for _, slot := range f.shards[i].slots {
			if slot == 0 || slot == tombstone {
				continue
			}
			ref := refOf(slot)
			// The view's records never change: the key may alias them.
			if !fn(aliasString(rec.key(ref)), rec.value(ref)) {
				return
			}
		}
	}
}

// Release ends the view: once no view is left, writes overwrite records
// in place again, and the shards whose garbage grew past their bound
// while the view lived compact. Range must not be called after it.
func (f *Frozen) Release() {
	s := f.s
	s.freezeMu.Lock()
	if s.frozen--; s.frozen > 0 {
		s.freezeMu.Unlock()
		return
	}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.slotsShared, sh.arenaShared = false, false
		sh.retired.free(sh.acct)
		sh.mu.Unlock()
	}
	s.freezeMu.Unlock()
	// What the view kept from compacting, outside freezeMu, so that the
	// next Freeze need not wait for the copies; a shard a new view already
	// holds is skipped (maybeCompact).
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.maybeCompact()
		sh.mu.Unlock()
	}
}
