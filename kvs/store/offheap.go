package store

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"
)

// The Arena keeps its records and its larger slot tables outside the Go
// heap, in memory it maps from the kernel itself (offheap). The garbage
// collector lets the heap grow to twice what it holds live before it
// collects (GOGC=100), and a store on the heap is part of what it holds:
// with it, a server took 582 bytes a key for a 145-byte record at
// 2,000,000 keys (issue 35).
// Memory mapped apart is neither scanned nor counted by the collector:
// the heap's headroom is then a share of what requests hold, not of the
// store.
//
// Memory is mapped in regions of regionSize and handed out in chunks of
// minChunk to chunkSize bytes (a power of two), which a shard of an Arena
// fills with records one after the other, each chunk twice the size of the
// one before up to chunkSize, so that a shard with little data holds
// little memory. A chunk or table freed is given back to the kernel (its pages
// dropped, madvise DONTNEED) and kept for reuse; nothing is ever
// unmapped, so a reference kept past its time by mistake reads zeros or a
// newer record, never unmapped memory.
const (
	chunkBits  = 16
	chunkSize  = 1 << chunkBits // bytes of the largest chunk of records
	minChunk   = 4096           // bytes of the smallest, a page
	regionSize = 64 * chunkSize // bytes mapped at a time for chunks

	// minMappedTable is the fewest slots of a table that is mapped apart;
	// smaller tables (every shard of a small store) stay on the heap.
	minMappedTable = chunkSize / 8
)

// offheap hands out chunks and slot tables of mapped memory. It is safe
// for concurrent use.
type offheap struct {
	mu     sync.Mutex
	free   map[int][][]byte   // guarded by mu: chunks to reuse by size, pages dropped
	region []byte             // guarded by mu: the rest of the region being carved
	tables map[int][][]uint64 // guarded by mu: tables to reuse by length, pages dropped
	mapped atomic.Int64       // bytes mapped so far
	inUse  atomic.Int64       // bytes of chunks and tables handed out and not freed
	sys    func(n int) []byte // maps n bytes of zeroed memory (mapMemory)
	drop   func(b []byte)     // gives b's pages back to the kernel (dropPages)
}

// pages is the process's off-heap memory: every Arena shares it, as every
// map shares the Go heap.
var pages = offheap{free: map[int][][]byte{}, tables: map[int][][]uint64{}, sys: mapMemory, drop: dropPages}

// Account counts the bytes that a group of Arenas (a server's) hold in
// records and slot tables, so that a server can refuse writes past its
// share of memory. The zero value is ready; it is safe for concurrent use.
type Account struct {
	bytes atomic.Int64
	limit atomic.Int64 // what the Arenas may hold; 0: no bound
}

// Bytes returns the bytes the Arenas of a hold.
func (a *Account) Bytes() int64 { return a.bytes.Load() }

// SetLimit tells the Arenas of a that they may hold limit bytes (0: no
// bound), past which their server refuses writes. Past three quarters of
// it they are tight: a shard then compacts once its dead records are a
// quarter of its records' bytes, not half, so that what fills the limit
// is live records more, overwritten ones less. A nil Account ignores it.
func (a *Account) SetLimit(limit int64) {
	if a != nil {
		a.limit.Store(limit)
	}
}

// tight reports whether the Arenas of a hold more than three quarters of
// their limit; a nil Account never is.
func (a *Account) tight() bool {
	if a == nil {
		return false
	}
	limit := a.limit.Load()
	return limit > 0 && a.bytes.Load() > limit/4*3
}

// add counts n bytes taken (negative: given back); a nil Account counts
// nothing.
func (a *Account) add(n int64) {
	if a != nil {
		a.bytes.Add(n)
	}
}

// OffHeap reports the off-heap memory of every Arena in the process: the
// bytes mapped from the kernel, and the bytes of them in use (the rest is
// kept for reuse with its pages given back).
func OffHeap() (mapped, inUse int64) { return pages.mapped.Load(), pages.inUse.Load() }

// chunk returns a chunk of size bytes: a power of two from minChunk to
// chunkSize.
func (p *offheap) chunk(size int) []byte {
	p.inUse.Add(int64(size))
	p.mu.Lock()
	defer p.mu.Unlock()
	if free := p.free[size]; len(free) > 0 {
		c := free[len(free)-1]
		p.free[size] = free[:len(free)-1]
		return c
	}
	if len(p.region) < size { // every size divides regionSize: nothing is left over
		p.region = p.sys(regionSize)
		p.mapped.Add(regionSize)
	}
	c := p.region[:size:size]
	p.region = p.region[size:]
	return c
}

// freeChunks takes back chunks that chunk returned; others (a big
// record's own allocation on the heap, larger than chunkSize) are left to
// the collector.
func (p *offheap) freeChunks(cs [][]byte) {
	n := 0
	for _, c := range cs {
		if cap(c) <= chunkSize {
			p.drop(c[:cap(c)])
			n += cap(c)
		}
	}
	if n == 0 {
		return
	}
	p.inUse.Add(-int64(n))
	p.mu.Lock()
	for _, c := range cs {
		if cap(c) <= chunkSize {
			p.free[cap(c)] = append(p.free[cap(c)], c[:cap(c)])
		}
	}
	p.mu.Unlock()
}

// table returns a zeroed slot table of n slots, n a power of two.
func (p *offheap) table(n int) []uint64 {
	if n < minMappedTable {
		return make([]uint64, n)
	}
	p.inUse.Add(int64(n) * 8)
	p.mu.Lock()
	if free := p.tables[n]; len(free) > 0 {
		t := free[len(free)-1]
		p.tables[n] = free[:len(free)-1]
		p.mu.Unlock()
		return t // zero: its pages were dropped when it was freed
	}
	p.mu.Unlock()
	b := p.sys(n * 8)
	p.mapped.Add(int64(n) * 8)
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// freeTable takes back a table that table returned.
func (p *offheap) freeTable(t []uint64) {
	n := len(t)
	if n < minMappedTable {
		return
	}
	if n != cap(t) {
		panic(fmt.Sprintf("store: freeing a slot table of %d slots with room for %d", n, cap(t)))
	}
	p.drop(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(t))), n*8))
	p.inUse.Add(-int64(n) * 8)
	p.mu.Lock()
	p.tables[n] = append(p.tables[n], t)
	p.mu.Unlock()
}
