package store

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/batchkv/batchkv/wire"
)

// Arena is a Store built for lookups over millions of keys: a hash
// table split into shards, each an open-addressing table of 8-byte slots
// over one byte slice (the arena) that holds every key and value of the
// shard back to back. Neither slice contains a pointer, so the garbage
// collector never scans the data, and a lookup touches two places in
// memory: the slot, and the record it points to, where the key and value
// sit together.
//
// Each shard has a sync.RWMutex: reads of a shard share it, a write holds
// it alone. A put whose value fits the old one's room overwrites it in
// place; otherwise the record is appended and the old one becomes garbage,
// which a shard reclaims by compacting once it is half its arena.
//
// Keys may be up to 65,535 bytes and values up to 4 GiB - 1 (far above the
// wire's limits); Put panics beyond that.
type Arena struct {
	seed   maphash.Seed
	shards [arenaShards]arenaShard
	sink   atomic.Uint32 // where ApplyBatch's prefetching loads end up

	freezeMu sync.Mutex // serializes Freeze and Release
	frozen   int        // guarded by freezeMu: views not yet released
}

const (
	arenaShardBits = 8
	arenaShards    = 1 << arenaShardBits

	// A slot is tag<<tagShift | (offset+1) with the tag taken from the
	// key's hash, so most mismatches are rejected without reading the
	// arena. 0 is an empty slot.
	tagShift  = 48
	offMask   = 1<<tagShift - 1
	tombstone = offMask // a deleted slot: probing goes on past it

	// Record header: key length u16, value room u32, value length u32.
	recHeader = 2 + 4 + 4

	minSlots = 64

	maxArenaKey   = 1<<16 - 1 // a key's length must fit its u16
	maxArenaValue = 1<<32 - 1 // a value's, its u32
)

type arenaShard struct {
	mu      sync.RWMutex
	seed    maphash.Seed // the store's, to rehash keys when rebuilding
	slots   []uint64
	arena   []byte
	live    int // keys present
	used    int // slots not empty: live keys and tombstones
	garbage int // arena bytes of dead records
	// A frozen view (Freeze) holds slots and arena as they were. While
	// slotsShared, the next write copies slots before changing them; while
	// arenaShared, no write overwrites a record in place (appending past
	// the view's end is safe).
	slotsShared, arenaShared bool
	_                        [64]byte
}

// NewArena returns an empty store.
func NewArena() *Arena {
	s := &Arena{seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].slots = make([]uint64, minSlots)
		s.shards[i].seed = s.seed
	}
	return s
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
		off := int(sh.slots[i]&offMask) - 1
		dst = append(dst, sh.value(off)...)
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
			off := int(slot&offMask) - 1
			if !fn(sh.key(off), sh.value(off)) {
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
		case slot>>tagShift == tag && sh.key(int(slot&offMask)-1) == key:
			return i, true
		}
	}
}

func (sh *arenaShard) key(off int) string {
	n := int(binary.LittleEndian.Uint16(sh.arena[off:]))
	return string(sh.arena[off+recHeader : off+recHeader+n]) // compared, not kept: no copy
}

func (sh *arenaShard) value(off int) []byte {
	klen := int(binary.LittleEndian.Uint16(sh.arena[off:]))
	vlen := int(binary.LittleEndian.Uint32(sh.arena[off+6:]))
	at := off + recHeader + klen
	return sh.arena[at : at+vlen]
}

func (sh *arenaShard) recordSize(off int) int {
	klen := int(binary.LittleEndian.Uint16(sh.arena[off:]))
	room := int(binary.LittleEndian.Uint32(sh.arena[off+2:]))
	return recHeader + klen + room
}

// appendRecord adds a record for key and value to the arena and returns
// its slot word.
func (sh *arenaShard) appendRecord(key, value string, h uint64) uint64 {
	if len(key) > maxArenaKey || uint64(len(value)) > maxArenaValue {
		// The service checks wire's far smaller limits before it gets here.
		panic(fmt.Sprintf("kvs: Arena record too large: key %d bytes, value %d", len(key), len(value)))
	}
	off := len(sh.arena)
	var hdr [recHeader]byte
	binary.LittleEndian.PutUint16(hdr[0:], uint16(len(key)))
	binary.LittleEndian.PutUint32(hdr[2:], uint32(len(value)))
	binary.LittleEndian.PutUint32(hdr[6:], uint32(len(value)))
	sh.arena = append(sh.arena, hdr[:]...)
	sh.arena = append(sh.arena, key...)
	sh.arena = append(sh.arena, value...)
	return tagOf(h)<<tagShift | uint64(off+1)
}

// unshareSlots gives the shard slots of its own before a write changes
// them, if a frozen view holds the current ones.
func (sh *arenaShard) unshareSlots() {
	if sh.slotsShared {
		sh.slots = slices.Clone(sh.slots)
		sh.slotsShared = false
	}
}

func (sh *arenaShard) put(key, value string, h uint64) {
	sh.unshareSlots()
	i, found := sh.find(key, h)
	if found {
		off := int(sh.slots[i]&offMask) - 1
		klen := int(binary.LittleEndian.Uint16(sh.arena[off:]))
		if room := int(binary.LittleEndian.Uint32(sh.arena[off+2:])); len(value) <= room && !sh.arenaShared {
			binary.LittleEndian.PutUint32(sh.arena[off+6:], uint32(len(value)))
			copy(sh.arena[off+recHeader+klen:], value)
			return
		}
		sh.garbage += sh.recordSize(off)
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
		cur = sh.value(int(sh.slots[i]&offMask) - 1)
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
		sh.garbage += sh.recordSize(int(sh.slots[i]&offMask) - 1)
		sh.slots[i] = tombstone
		sh.live--
		sh.maybeCompact()
	}
}

// maybeCompact rebuilds the shard once dead records are half its arena.
func (sh *arenaShard) maybeCompact() {
	if sh.garbage > 1<<12 && sh.garbage*2 > len(sh.arena) {
		sh.rebuild(len(sh.slots), true)
	}
}

// rebuild rehashes the live records into a table of n slots, which drops
// the tombstones, and with compact copies them into a new arena, which
// drops the garbage.
func (sh *arenaShard) rebuild(n int, compact bool) {
	old, arena := sh.slots, sh.arena
	sh.slots = make([]uint64, n)
	if compact {
		sh.arena = make([]byte, 0, len(arena)-sh.garbage)
		sh.garbage = 0
	}
	mask := n - 1
	for _, slot := range old {
		if slot == 0 || slot == tombstone {
			continue
		}
		off := int(slot&offMask) - 1
		klen := int(binary.LittleEndian.Uint16(arena[off:]))
		key := arena[off+recHeader : off+recHeader+klen]
		h := maphash.Bytes(sh.seed, key)
		if compact {
			size := recHeader + klen + int(binary.LittleEndian.Uint32(arena[off+2:]))
			slot = tagOf(h)<<tagShift | uint64(len(sh.arena)+1)
			sh.arena = append(sh.arena, arena[off:off+size]...)
		}
		i := int(h) & mask
		for sh.slots[i] != 0 {
			i = (i + 1) & mask
		}
		sh.slots[i] = slot
	}
	sh.used = sh.live
}
