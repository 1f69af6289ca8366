package store

// Values receives the values that a batch's gets read. It copies each
// into chunks that it never moves, so a result may alias its value for as
// long as the Values lives, however many values follow. Growing one
// slice instead would copy it, and every result appended before the copy
// would keep the old slice alive: a batch reading 62 MiB that way held
// about five times that.
//
// The zero value accepts nothing; set Limit. A Values is not safe for
// concurrent use.
type Values struct {
	// Limit caps the bytes accepted in total; a value past it is refused.
	Limit int
	// Hint is the size of the first chunk: the caller's guess of the
	// total. Later chunks double, up to what Limit leaves.
	Hint int

	buf       []byte // the current chunk: len used, cap its size
	total     int
	allocated int // bytes of every chunk: what the results keep alive
}

// Add copies v and returns the copy as a string, or false when it would
// take the total past Limit.
func (vs *Values) Add(v []byte) (string, bool) {
	if vs.total+len(v) > vs.Limit {
		return "", false
	}
	if cap(vs.buf)-len(vs.buf) < len(v) {
		size := max(vs.Hint, 2*cap(vs.buf))
		size = max(min(size, vs.Limit-vs.total), len(v))
		vs.buf = make([]byte, 0, size)
		vs.allocated += size
	}
	at := len(vs.buf)
	vs.buf = append(vs.buf, v...)
	vs.total += len(v)
	return aliasString(vs.buf[at:]), true
}

// Fits reports whether Add would accept a value of n bytes.
func (vs *Values) Fits(n int) bool { return vs.total+n <= vs.Limit }

// Len returns the bytes of the values added.
func (vs *Values) Len() int { return vs.total }

// Allocated returns the bytes of every chunk allocated: what results that
// alias the values keep alive, at least Len.
func (vs *Values) Allocated() int { return vs.allocated }
