package store

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestArenaMemoryStaysBoundedUnderChurn: overwriting every key again and
// again with values that do not fit their room, then deleting most keys,
// never lets the store's records grow past about twice what is live (the
// compaction threshold), and a shard's chunks go back to be reused rather
// than being mapped anew.
func TestArenaMemoryStaysBoundedUnderChurn(t *testing.T) {
	s := NewArena()
	const keys = 100000
	val := func(round, i int) string { return fmt.Sprintf("%d-%d-%s", round, i, strings.Repeat("v", 100+round)) }
	for i := range keys {
		s.Put(fmt.Sprint(i), val(0, i))
	}
	live := func() int64 { // bytes the live records need
		n := int64(0)
		s.Range(func(k string, v []byte) bool { n += int64(headerSize(len(k), len(v)) + len(k) + len(v)); return true })
		return n
	}
	first := s.Bytes()
	mappedBefore, _ := OffHeap()
	for round := 1; round <= 8; round++ {
		for i := range keys {
			s.Put(fmt.Sprint(i), val(round, i))
		}
		slots := int64(0)
		for i := range s.shards {
			slots += int64(8 * len(s.shards[i].slots))
		}
		require.LessOrEqual(t, s.Bytes()-slots, 2*live()+arenaShards*chunkSize,
			"round %d: records past twice the live bytes plus a chunk a shard", round)
	}
	mappedAfter, _ := OffHeap()
	require.Less(t, mappedAfter-mappedBefore, 3*first, "freed chunks are reused, not mapped anew")
	for i := range keys {
		v, ok := Get(s, fmt.Sprint(i))
		require.True(t, ok)
		require.Equal(t, val(8, i), v)
	}
	for i := range keys - 100 {
		s.Delete(fmt.Sprint(i))
	}
	require.Equal(t, 100, s.Len())
	// A shard compacts once half its bytes are waste and more than 4 KiB, so
	// up to about 12 KiB a shard may stay.
	require.Less(t, s.Bytes(), first/2, "deletes give memory back")
}

// TestArenaBigRecords: a record larger than a chunk gets a chunk of its
// own, survives compaction, and reads back whole, beside small ones.
func TestArenaBigRecords(t *testing.T) {
	s := NewArena()
	big := strings.Repeat("b", 3*chunkSize)
	s.Put("big", big)
	for i := range 5000 {
		s.Put(fmt.Sprint(i), "small")
	}
	for round := range 10 { // garbage that compacts every shard, the big one's too
		for i := range 5000 {
			s.Put(fmt.Sprint(i), strings.Repeat("s", 10+round))
		}
	}
	v, ok := Get(s, "big")
	require.True(t, ok)
	require.Equal(t, big, v)
	s.Put("big", big[:chunkSize]) // fits the room: in place
	v, _ = Get(s, "big")
	require.Equal(t, big[:chunkSize], v)
}

// TestArenaMemoryFreedWhenUnreachable: a store that nothing references
// any more gives its off-heap memory back (a replica's store is replaced
// on every snapshot restore and every shard move).
func TestArenaMemoryFreedWhenUnreachable(t *testing.T) {
	before := settledOffHeap()
	func() {
		s := NewArena()
		for i := range 50000 {
			s.Put(fmt.Sprint(i), strings.Repeat("x", 128))
		}
		_, during := OffHeap()
		require.Greater(t, during-before, int64(50000*128))
		runtime.KeepAlive(s)
	}()
	require.Less(t, settledOffHeap()-before, int64(1<<20), "the store's chunks and tables were not given back")
}

// settledOffHeap returns the off-heap bytes in use once the stores that
// earlier tests dropped have been given back: when collections in a row
// change nothing.
func settledOffHeap() int64 {
	_, last := OffHeap()
	for same := 0; same < 5; {
		runtime.GC()
		time.Sleep(20 * time.Millisecond) // cleanups run on a goroutine of their own
		_, now := OffHeap()
		if now == last {
			same++
		} else {
			same = 0
		}
		last = now
	}
	return last
}

// TestFrozenViewHoldsItsMemory: chunks and tables a frozen view reads are
// not given back (and so not reused by other writes) until Release, even
// when the shard's garbage passes what would compact it meanwhile.
func TestFrozenViewHoldsItsMemory(t *testing.T) {
	s := NewArena()
	for i := range 20000 {
		s.Put(fmt.Sprint(i), strings.Repeat("a", 100))
	}
	f := s.Freeze()
	other := NewArena() // writes to another store would reuse freed chunks
	for round := range 6 {
		for i := range 20000 {
			s.Put(fmt.Sprint(i), strings.Repeat("b", 101+round))
			other.Put(fmt.Sprint(i), strings.Repeat("c", 101+round))
		}
	}
	n := 0
	f.Range(func(k string, v []byte) bool {
		require.Equal(t, strings.Repeat("a", 100), string(v), "key %s", k)
		n++
		return true
	})
	require.Equal(t, 20000, n)
	_, held := OffHeap()
	f.Release()
	_, released := OffHeap()
	require.Less(t, released, held, "Release gave the retired memory back")
	runtime.KeepAlive(other)
}

// TestAccountCountsItsArenas: an Account counts the tables and chunks of
// the Arenas made in it, whatever they take and give back, and nothing
// once they are gone.
func TestAccountCountsItsArenas(t *testing.T) {
	var acct Account
	func() {
		a, b := NewArenaIn(&acct), NewArenaIn(&acct)
		for i := range 30000 {
			a.Put(fmt.Sprint(i), strings.Repeat("a", 100))
			b.Put(fmt.Sprint(i), strings.Repeat("b", 100+i%3))
		}
		require.Equal(t, a.Bytes()+b.Bytes(), acct.Bytes())
		f := a.Freeze()
		for i := range 30000 { // new tables, whose old ones a view holds, and garbage it keeps from compacting
			a.Put(fmt.Sprint(i), strings.Repeat("c", 200))
		}
		require.Greater(t, acct.Bytes(), a.Bytes()+b.Bytes(), "the view's memory is still held")
		f.Release()
		require.Equal(t, a.Bytes()+b.Bytes(), acct.Bytes())
		for i := range 30000 {
			b.Delete(fmt.Sprint(i))
		}
		require.Equal(t, a.Bytes()+b.Bytes(), acct.Bytes())
		runtime.KeepAlive(a)
		runtime.KeepAlive(b)
	}()
	settledOffHeap()
	require.Zero(t, acct.Bytes())
}
