package store

import (
	"fmt"
	"hash/maphash"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/batchkv/batchkv/wire"
)

// Arena is a Store built for lookups over millions of keys: a hash
// table split into shards, each an open-addressing table of 8-byte slots
// over chunks of memory (records) that hold every key and value of the
// shard back to back. Both live outside the Go heap (offheap.go), so the
// garbage collector neither scans the data nor lets the heap grow by its
// size, and a lookup touches two places in memory: the slot, and the
// record it points to, where the key and value sit together. A record
// costs its key and value, a header of 3-5 bytes for keys under 128 bytes
// and values under 16 KiB (records.go), and 8 bytes of slot at a table
// three-eighths to three-quarters full.
//
// Each shard has a sync.RWMutex: reads of a shard share it, a write holds
// it alone. A put whose value fits the old one's room overwrites it in
// place; otherwise the record is appended and the old one becomes garbage,
// which a shard reclaims by compacting once it is half its records' bytes
// (a quarter when its Account nears its limit).
// A shard is 1/256 of the store, so a compaction holds up only the ops of
// that shard, for the time it takes to copy its live records.
//
// Keys may be up to 65,535 bytes and values up to 4 GiB - 1 (far above the
// wire's limits); Put panics beyond that.
type Arena struct {
	seed   maphash.Seed
	shards *[arenaShards]arenaShard // apart, so that a cleanup frees their memory
	sink   atomic.Uint32            // where ApplyBatch's prefetching loads end up

	freezeMu sync.Mutex // serializes Freeze and Release
	frozen   int        // guarded by freezeMu: views not yet released
}

const (
	arenaShardBits = 8
	arenaShards    = 1 << arenaShardBits

	// A slot is tag<<tagShift | (offset+1) with the tag taken from the
	// key's hash, so most mismatches are rejected without reading the
	// arena. 0 is an empty slot.
	// The rest is the record's ref + 1 (records).
	tagShift  = 48
	offMask   = 1<<tagShift - 1
	tombstone = offMask // a deleted slot: probing goes on past it

	minSlots = 64

	maxArenaKey   = 1<<16 - 1 // a key's length must fit its u16
	maxArenaValue = 1<<32 - 1 // a value's, its u32
)

type arenaShard struct {
	mu      sync.RWMutex
	seed    maphash.Seed // the store's, to rehash keys when rebuilding
	slots   []uint64     // from pages.table
	rec     records
	live    int // keys present
	used    int // slots not empty: live keys and tombstones
	garbage int // bytes of rec in dead records
	// A frozen view (Freeze) holds slots and records as they were. While
	// slotsShared, the next write copies slots before changing them; while
	// arenaShared, no write overwrites in place a record from before
	// viewEnd (the latest view's end: records added since are in no view),
	// the shard does not compact (the chunks it would free stay held
	// until the last view is released, so a compaction would only add a
	// copy of the live records: Release compacts instead), and the tables
	// the shard stops using wait in retired.
	slotsShared, arenaShared bool
	viewEnd                  recordsEnd
	retired                  retired
	acct                     *Account // the store's: counts tables and chunks
	_                        [64]byte
}

// retired holds tables a frozen view may still read.
type retired struct {
	tables [][]uint64
}

// free gives the memory back to pages.
func (r *retired) free(acct *Account) {
	for _, t := range r.tables {
		giveTable(acct, t)
	}
	*r = retired{}
}

// takeTable returns a zeroed table of n slots counted in acct.
func takeTable(acct *Account, n int) []uint64 {
	acct.add(int64(8 * n))
	return pages.table(n)
}

// giveTable gives back a table that takeTable returned.
func giveTable(acct *Account, t []uint64) {
	acct.add(-int64(8 * len(t)))
	pages.freeTable(t)
}

// NewArena returns an empty store. Its off-heap memory is given back once
// the store (and every Frozen view of it) is unreachable.
func NewArena() *Arena { return NewArenaIn(nil) }

// NewArenaIn returns an empty store whose records and tables are counted
// in acct (nil: in no Account).
func NewArenaIn(acct *Account) *Arena {
	s := &Arena{seed: maphash.MakeSeed(), shards: new([arenaShards]arenaShard)}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.acct, sh.seed = acct, s.seed
		sh.slots = takeTable(acct, minSlots)
		sh.rec = newRecords(acct)
	}
	runtime.AddCleanup(s, freeShards, s.shards)
	return s
}

// freeShards gives back the memory of an Arena that is no longer reachable.
func freeShards(shards *[arenaShards]arenaShard) {
	for i := range shards {
		sh := &shards[i]
		sh.retired.free(sh.acct)
		giveTable(sh.acct, sh.slots)
		sh.rec.free()
		sh.slots = nil
	}
}

// Bytes returns the bytes of memory the store's records and tables take.
func (s *Arena) Bytes() int64 {
	var n int64
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		n += int64(sh.rec.bytes + 8*len(sh.slots))
		sh.mu.RUnlock()
	}
	return n
}

func (s *Arena) locate(key string) (*arenaShard, uint64) {
	h := maphash.String(s.seed, key)
	return &s.shards[h>>(64-arenaShardBits)], h
}

// tagOf takes 16 bits of h that pick neither the shard nor, in tables of
// up to 2^40 slots, the home slot.
func tagOf(h uint64) uint64 { return (h >> 40) & 0xffff }

// AppendGet implements Store.
func (s *Arena) AppendGet(dst []byte, key string) ([]byte, bool) {
	sh, h := s.locate(key)
	sh.mu.RLock()
	i, found := sh.find(key, h)
	if found {
		dst = append(dst, sh.rec.value(refOf(sh.slots[i]))...)
	}
	sh.mu.RUnlock()
	return dst, found
}

// Put implements Store.
func (s *Arena) Put(key, value string) {
	sh, h := s.locate(key)
	sh.mu.Lock()
	sh.put(key, value, h)
	sh.mu.Unlock()
}

// PutIf implements Store.
func (s *Arena) PutIf(op *wire.Op, vals *Values) wire.Result {
	sh, h := s.locate(op.Key)
	sh.mu.Lock()
	res := sh.putIf(op, h, vals)
	sh.mu.Unlock()
	return res
}

// Delete implements Store.
func (s *Arena) Delete(key string) {
	sh, h := s.locate(key)
	sh.mu.Lock()
	sh.delete(key, h)
	sh.mu.Unlock()
}

// Len implements Store.
func (s *Arena) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		n += sh.live
		sh.mu.RUnlock()
	}
	return n
}

// Range implements Store. It holds one shard's read lock at a time.
func (s *Arena) Range(fn func(key string, value []byte) bool) {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		for _, slot := range sh.slots {
			if slot == 0 || slot == tombstone {
				continue
			}
			ref := refOf(slot)
			if !fn(string(sh.rec.key(ref)), sh.rec.value(ref)) { // the key is a copy, which a caller may keep
				sh.mu.RUnlock()
				return
			}
		}
		sh.mu.RUnlock()
	}
}

// find returns the slot holding key, or, when key is absent, the slot
// where it would go (the first tombstone on its probe path, else the empty
// slot that ended it).
func (sh *arenaShard) find(key string, h uint64) (int, bool) {
	mask := len(sh.slots) - 1
	tag := tagOf(h)
	free := -1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		slot := sh.slots[i]
		switch {
		case slot == 0:
			if free < 0 {
				free = i
			}
			return free, false
		case slot == tombstone:
			if free < 0 {
				free = i
			}
		case slot>>tagShift == tag && aliasString(sh.rec.key(refOf(slot))) == key: // compared, not kept
			return i, true
		}
	}
}

// refOf returns the ref of the record that a full slot points to.
func refOf(slot uint64) uint64 { return slot&offMask - 1 }

// appendRecord adds a record for key and value and returns its slot word.
func (sh *arenaShard) appendRecord(key, value string, h uint64) uint64 {
	if len(key) > maxArenaKey || uint64(len(value)) > maxArenaValue {
		// The service checks wire's far smaller limits before it gets here.
		panic(fmt.Sprintf("kvs: Arena record too large: key %d bytes, value %d", len(key), len(value)))
	}
	return tagOf(h)<<tagShift | (sh.rec.add(key, value) + 1)
}

// unshareSlots gives the shard slots of its own before a write changes
// them, if a frozen view holds the current ones.
func (sh *arenaShard) unshareSlots() {
	if sh.slotsShared {
		t := takeTable(sh.acct, len(sh.slots))
		copy(t, sh.slots)
		sh.retired.tables = append(sh.retired.tables, sh.slots)
		sh.slots = t
		sh.slotsShared = false
	}
}

func (sh *arenaShard) put(key, value string, h uint64) {
	sh.unshareSlots()
	i, found := sh.find(key, h)
	if found {
		ref := refOf(sh.slots[i])
		rec := sh.rec.at(ref)
		if h := readHead(rec); len(value) <= h.room && !(sh.arenaShared && sh.viewEnd.before(ref)) {
			h.setValueLen(rec, len(value))
			copy(rec[h.n+h.klen:], value)
			return
		}
		sh.garbage += sh.rec.size(ref)
		sh.slots[i] = sh.appendRecord(key, value, h)
		sh.maybeCompact()
		return
	}
	if sh.slots[i] == 0 {
		sh.used++
	}
	sh.slots[i] = sh.appendRecord(key, value, h)
	sh.live++
	if sh.used*4 > len(sh.slots)*3 { // over 3/4 full: grow, or just sweep tombstones
		n := len(sh.slots)
		if sh.live*2 > n {
			n *= 2
		}
		sh.rebuild(n, false)
	}
}

// putIf decides and applies a conditional put; the caller holds the
// shard's lock exclusively. The old value is copied out before put may
// overwrite it in place.
func (sh *arenaShard) putIf(op *wire.Op, h uint64, vals *Values) wire.Result {
	i, found := sh.find(op.Key, h)
	var cur []byte
	if found {
		cur = sh.rec.value(refOf(sh.slots[i]))
	}
	res := wire.Result{Status: op.Decide(aliasString(cur), found)}
	if found {
		v, ok := vals.Add(cur)
		if !ok {
			return wire.Result{Status: wire.StatusTooLarge}
		}
		res.Value = v
	}
	if res.Status.Applied() {
		sh.put(op.Key, op.Value, h)
	}
	return res
}

func (sh *arenaShard) delete(key string, h uint64) {
	if i, found := sh.find(key, h); found {
		sh.unshareSlots()
		sh.garbage += sh.rec.size(refOf(sh.slots[i]))
		sh.slots[i] = tombstone
		sh.live--
		sh.maybeCompact()
	}
}

// maybeCompact rebuilds the shard once dead records and skipped chunk
// tails are half its records' bytes, or, while its Account is tight, once
// dead records are a quarter of the bytes the tails leave, unless a
// frozen view holds its records. The tails stay out of the tighter rule:
// a compaction leaves as many (records of 40 KB skip 24 KB of each 64 KB
// chunk), so with them a shard would compact again on every write.
func (sh *arenaShard) maybeCompact() {
	if sh.arenaShared {
		return
	}
	waste := sh.garbage + sh.rec.skipped
	if waste > 1<<12 && (waste*2 > sh.rec.bytes || sh.acct.tight() && sh.garbage*4 > sh.rec.bytes-sh.rec.skipped) {
		n := len(sh.slots)
		for n > minSlots && sh.live*4 < n { // under a quarter full: a smaller table
			n /= 2
		}
		sh.rebuild(n, true)
	}
}

// rebuild rehashes the live records into a table of n slots, which drops
// the tombstones, and with compact (never while arenaShared) copies them
// into new chunks, which drops the garbage. A table the shard stops using
// goes back to pages, or waits in retired while a frozen view may read it;
// its old chunks go back to pages.
func (sh *arenaShard) rebuild(n int, compact bool) {
	old, rec := sh.slots, &sh.rec
	sh.slots = takeTable(sh.acct, n)
	var fresh records
	if compact {
		fresh = newRecords(sh.acct)
	}
	mask := n - 1
	for _, slot := range old {
		if slot == 0 || slot == tombstone {
			continue
		}
		ref := refOf(slot)
		h := maphash.Bytes(sh.seed, rec.key(ref))
		if compact {
			slot = tagOf(h)<<tagShift | (fresh.copyFrom(rec, ref) + 1)
		}
		i := int(h) & mask
		for sh.slots[i] != 0 {
			i = (i + 1) & mask
		}
		sh.slots[i] = slot
	}
	sh.used = sh.live
	if sh.slotsShared {
		sh.retired.tables = append(sh.retired.tables, old)
		sh.slotsShared = false
	} else {
		giveTable(sh.acct, old)
	}
	if compact {
		rec.free() // no view holds it: maybeCompact waits for the last Release
		sh.rec = fresh
		sh.garbage = 0
	}
}
