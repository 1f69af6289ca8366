package store

import "encoding/binary"

// records is one shard's record space: chunks from the process's
// off-heap memory (offheap), each twice the one before up to chunkSize,
// filled one record after another, and a chunk of its own on the heap for
// each record larger than chunkSize. A record
// never straddles two chunks, and never moves until the shard compacts.
//
// A record is found by its ref: its chunk's index << chunkBits | its offset
// in the chunk. It is laid out as its header (key length u16, value room
// u32, value length u32), the key, then the value with room bytes for it.
//
// A records is not safe for concurrent use; its shard's lock guards it.
type records struct {
	chunks [][]byte // every chunk, in the order taken
	cur    int      // index in chunks of the chunk being filled; -1 before the first
	fill   int      // bytes used in chunks[cur]
	bytes  int      // bytes of every chunk
	// skipped counts the bytes of chunk tails left unused, too short for
	// the record that came next: garbage, as dead records are.
	skipped int
	acct    *Account // counts the chunks taken; nil counts nothing
}

// room makes sure that the chunk being filled has room for a record of n
// bytes, n at most chunkSize, taking a new one if it lacks it.
func (r *records) room(n int) {
	if r.cur >= 0 && r.fill+n <= len(r.chunks[r.cur]) {
		return
	}
	size := minChunk
	if r.cur >= 0 {
		r.skipped += len(r.chunks[r.cur]) - r.fill
		size = min(2*len(r.chunks[r.cur]), chunkSize)
	}
	for size < n {
		size *= 2
	}
	r.cur, r.fill = len(r.chunks), 0
	r.chunks = append(r.chunks, pages.chunk(size))
	r.bytes += size
	r.acct.add(int64(size))
}

// Record header: key length u16, value room u32, value length u32.
const recHeader = 2 + 4 + 4

func newRecords(acct *Account) records { return records{cur: -1, acct: acct} }

// free gives every chunk back.
func (r *records) free() {
	pages.freeChunks(r.chunks)
	r.acct.add(-int64(r.bytes))
	*r = newRecords(r.acct)
}

// at returns the bytes from ref's record to the end of its chunk.
func (r *records) at(ref uint64) []byte {
	return r.chunks[ref>>chunkBits][ref&(chunkSize-1):]
}

// key returns the key of the record at ref, aliasing the chunk.
func (r *records) key(ref uint64) []byte {
	b := r.at(ref)
	n := int(binary.LittleEndian.Uint16(b))
	return b[recHeader : recHeader+n]
}

// value returns the value of the record at ref, aliasing the chunk.
func (r *records) value(ref uint64) []byte {
	b := r.at(ref)
	klen := int(binary.LittleEndian.Uint16(b))
	vlen := int(binary.LittleEndian.Uint32(b[6:]))
	return b[recHeader+klen : recHeader+klen+vlen]
}

// size returns the bytes the record at ref takes: header, key and room.
func (r *records) size(ref uint64) int {
	b := r.at(ref)
	return recHeader + int(binary.LittleEndian.Uint16(b)) + int(binary.LittleEndian.Uint32(b[2:]))
}

// add appends a record of key and value, with room for exactly the value,
// and returns its ref.
func (r *records) add(key, value string) (ref uint64) {
	n := recHeader + len(key) + len(value)
	var b []byte
	switch {
	case n > chunkSize:
		ref = uint64(len(r.chunks)) << chunkBits
		b = make([]byte, n)
		r.chunks = append(r.chunks, b)
		r.bytes += n
		r.acct.add(int64(n))
	default:
		r.room(n)
		ref = uint64(r.cur)<<chunkBits | uint64(r.fill)
		b = r.chunks[r.cur][r.fill : r.fill+n]
		r.fill += n
	}
	binary.LittleEndian.PutUint16(b, uint16(len(key)))
	binary.LittleEndian.PutUint32(b[2:], uint32(len(value)))
	binary.LittleEndian.PutUint32(b[6:], uint32(len(value)))
	copy(b[recHeader:], key)
	copy(b[recHeader+len(key):], value)
	return ref
}

// copyFrom appends a copy of the record at ref in src, room and all, and
// returns its ref here.
func (r *records) copyFrom(src *records, ref uint64) uint64 {
	n := src.size(ref)
	rec := src.at(ref)[:n]
	if n > chunkSize {
		out := uint64(len(r.chunks)) << chunkBits
		r.chunks = append(r.chunks, rec) // a big record's chunk is its own: share it
		r.bytes += n
		r.acct.add(int64(n))
		return out
	}
	r.room(n)
	out := uint64(r.cur)<<chunkBits | uint64(r.fill)
	copy(r.chunks[r.cur][r.fill:], rec)
	r.fill += n
	return out
}

// view returns a copy of r that a frozen view keeps: appending chunks to r
// later does not change its list.
func (r *records) view() records {
	v := *r
	v.chunks = v.chunks[:len(v.chunks):len(v.chunks)]
	return v
}
