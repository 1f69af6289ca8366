package backend

// writtenKey is what planShard knows of a key the batch writes.
type writtenKey struct {
	last  int // index in ops of its last write so far; -1 before the first
	rider int // entry index of its riding get; -1 while it has none
	// cond says the batch writes the key conditionally (wire.OpPutIf), so
	// what its gets read is known only once the entry is applied.
	cond bool
}

// writeSet is the set of keys a batch writes, with a writtenKey for each.
// Most gets of a batch read keys it does not write (three in four under
// the standard skewed YCSB-B load, whose hot keys are both read and
// written), so a filter with one bit per written key's fingerprint turns
// most of those lookups away before the map: with the ~140 keys that one
// shard's part of an 8,192-op batch writes, about 3% of the other keys
// pass it. The zero writeSet is empty and ready to use.
type writeSet struct {
	filter [filterBits / 64]uint64
	index  map[string]int32 // key -> its place in keys
	keys   []writtenKey
	writes int // ops added, counting each write of a key
}

// filterBits is the size of writeSet's filter.
const filterBits = 4096

// filterBit returns the bit of key's fingerprint in the filter: its word,
// and the bit in that word.
func filterBit(key string) (int, uint64) {
	h := fingerprint(key) >> (64 - 12) // 12 bits: filterBits
	return int(h / 64), 1 << (h % 64)
}

// fingerprint is a cheap hash of key for the filter: its length and its
// first and last 8 bytes (all of a short key), mixed by a multiply. Keys
// that share those collide, which costs them only a map lookup each.
func fingerprint(key string) uint64 {
	n := len(key)
	var a, b uint64
	if n >= 8 {
		a, b = load64(key), load64(key[n-8:])
	} else {
		for i := range n {
			a = a<<8 | uint64(key[i])
		}
	}
	x := (a ^ b<<1 ^ uint64(n)) * 0x9e3779b97f4a7c15
	return x ^ (x>>32)*0x9e3779b97f4a7c15
}

// load64 returns the first 8 bytes of s, little-endian.
func load64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// add notes a write of key, conditional or not.
func (s *writeSet) add(key string, cond bool) {
	s.writes++
	if s.index == nil {
		s.index = map[string]int32{}
	}
	if i, ok := s.index[key]; ok {
		s.keys[i].cond = s.keys[i].cond || cond
		return
	}
	s.index[key] = int32(len(s.keys))
	s.keys = append(s.keys, writtenKey{last: -1, rider: -1, cond: cond})
	w, b := filterBit(key)
	s.filter[w] |= b
}

// find returns what is known of key if the batch writes it, else nil.
// The pointer is valid until the next add.
func (s *writeSet) find(key string) *writtenKey {
	if s.writes == 0 {
		return nil
	}
	if w, b := filterBit(key); s.filter[w]&b == 0 {
		return nil
	}
	i, ok := s.index[key]
	if !ok {
		return nil
	}
	return &s.keys[i]
}
