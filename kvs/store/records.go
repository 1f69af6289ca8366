package store

import "encoding/binary"

// records is one shard's record space: chunks from the process's
// off-heap memory (offheap), each twice the one before up to chunkSize,
// filled one record after another, and a chunk of its own on the heap for
// each record larger than chunkSize. A record
// never straddles two chunks, and never moves until the shard compacts.
//
// A record is found by its ref: its chunk's index << chunkBits | its offset
// in the chunk. It is laid out as its header (see head), the key, then the
// value with room bytes for it.
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

// head is a record's header, decoded. On the record it is the key's
// length and the value's room as uvarints, then the value's length in as
// few bytes as hold the room (lenWidth): an overwrite in place changes
// only the length, so it never changes the header's size. A 7-byte key
// with a 128-byte value has a 4-byte header; a fixed header of a u16 and
// two u32s took 10, 6 bytes a key more (issue 35).
type head struct {
	klen, room, vlen int
	vlenAt           int // offset of the value's length in the record
	n                int // bytes of the header: the key starts here
}

// lenWidth returns the bytes of a value length of at most room.
func lenWidth(room int) int {
	switch {
	case room <= 0xff:
		return 1
	case room <= 0xffff:
		return 2
	}
	return 4
}

// headerSize returns the bytes of the header of a record with a key of
// klen bytes and room bytes for its value.
func headerSize(klen, room int) int {
	return uvarintLen(klen) + uvarintLen(room) + lenWidth(room)
}

func uvarintLen(v int) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// uvarint decodes a uvarint that the store wrote, so well formed. The
// one- and two-byte cases (keys under 128 bytes, values under 16 KiB) are
// inline: binary.Uvarint's loop made every put 25% slower.
func uvarint(b []byte) (v, n int) {
	if b[0] < 0x80 {
		return int(b[0]), 1
	}
	if b[1] < 0x80 {
		return int(b[0]&0x7f) | int(b[1])<<7, 2
	}
	u, n := binary.Uvarint(b)
	return int(u), n
}

// readHead decodes the header at the start of rec.
func readHead(rec []byte) head {
	klen, n1 := uvarint(rec)
	room, n2 := uvarint(rec[n1:])
	h := head{klen: klen, room: room, vlenAt: n1 + n2}
	h.n = h.vlenAt + lenWidth(room)
	switch h.n - h.vlenAt {
	case 1:
		h.vlen = int(rec[h.vlenAt])
	case 2:
		h.vlen = int(binary.LittleEndian.Uint16(rec[h.vlenAt:]))
	default:
		h.vlen = int(binary.LittleEndian.Uint32(rec[h.vlenAt:]))
	}
	return h
}

// setValueLen writes vlen, at most the room, as the value's length of the
// record rec whose header is h (its vlenAt and n: the length's width is
// what lies between them).
func (h head) setValueLen(rec []byte, vlen int) {
	switch h.n - h.vlenAt {
	case 1:
		rec[h.vlenAt] = byte(vlen)
	case 2:
		binary.LittleEndian.PutUint16(rec[h.vlenAt:], uint16(vlen))
	default:
		binary.LittleEndian.PutUint32(rec[h.vlenAt:], uint32(vlen))
	}
}

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
	h := readHead(b)
	return b[h.n : h.n+h.klen]
}

// value returns the value of the record at ref, aliasing the chunk.
func (r *records) value(ref uint64) []byte {
	b := r.at(ref)
	h := readHead(b)
	return b[h.n+h.klen : h.n+h.klen+h.vlen]
}

// size returns the bytes the record at ref takes: header, key and room.
func (r *records) size(ref uint64) int {
	h := readHead(r.at(ref))
	return h.n + h.klen + h.room
}

// add appends a record of key and value, with room for exactly the value,
// and returns its ref.
func (r *records) add(key, value string) (ref uint64) {
	hn := headerSize(len(key), len(value))
	n := hn + len(key) + len(value)
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
	at := binary.PutUvarint(b, uint64(len(key)))
	at += binary.PutUvarint(b[at:], uint64(len(value)))
	head{vlenAt: at, n: hn}.setValueLen(b, len(value))
	copy(b[hn:], key)
	copy(b[hn+len(key):], value)
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

// recordsEnd marks where a records stood when a view of it was taken:
// the records before it are the view's, the ones after were added since.
type recordsEnd struct{ chunks, cur, fill int }

// end returns where r stands now.
func (r *records) end() recordsEnd {
	return recordsEnd{chunks: len(r.chunks), cur: r.cur, fill: r.fill}
}

// before reports whether the record at ref was added before e was taken.
// Refs are not in the order added (a record too large for a chunk takes
// the next chunk's index while smaller records go on filling the current
// one), but every chunk taken since has an index past e's chunks, and in
// e's current chunk every record added since lies past its fill.
func (e recordsEnd) before(ref uint64) bool {
	c, off := int(ref>>chunkBits), int(ref&(chunkSize-1))
	return c < e.chunks && (c != e.cur || off < e.fill)
}

// view returns a copy of r that a frozen view keeps: appending chunks to r
// later does not change its list.
func (r *records) view() records {
	v := *r
	v.chunks = v.chunks[:len(v.chunks):len(v.chunks)]
	return v
}
