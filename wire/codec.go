package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"
)

// Binary body encoding (all integers little endian, lengths as uvarints):
//
//	BatchArgs:  ringID u64 | shard uvarint | session uvarint | seq uvarint | nOps uvarint | nOps × op
//	op:         code u8 | keyLen uvarint | key | [put: valLen uvarint | value]
//	            | [put-if: cond u8 | expectLen uvarint | expect | valLen uvarint | value]
//	BatchReply: status u8 | errLen uvarint | err | leaderLen uvarint | leader | nRes uvarint | nRes × (status u8 | valLen uvarint | value)
//
// Decoding makes one string of the whole body and slices keys and values
// out of it, so a batch costs one allocation for its bytes rather than one
// per op. The price is that a substring keeps the whole body alive: whoever
// keeps a key or value for long should copy it (the server's stores copy
// what they keep; client.Client copies the values it hands out one by one).

// ErrMalformed is returned (wrapped) when bytes do not decode as a batch.
var ErrMalformed = errors.New("wire: malformed batch")

// BatchArgsBound returns at least the bytes AppendBatchArgs appends for a
// batch of ops, whatever its header: a buffer of this capacity is never
// grown: the header's ring ID and four varints, then per op its code and
// condition, three lengths, its key, its value and its expected value.
func BatchArgsBound(ops []Op) int {
	n := batchHeaderBound
	for i := range ops {
		n += ops[i].bound()
	}
	return n
}

// batchHeaderBound is BatchArgsBound's share for a batch's header.
const batchHeaderBound = 8 + 4*binary.MaxVarintLen64

// bound is BatchArgsBound's share for op.
func (op *Op) bound() int {
	return 2 + 3*binary.MaxVarintLen64 + len(op.Key) + len(op.Value) + len(op.Expect)
}

// AppendBatchArgs appends the encoding of a to dst and returns the result.
func AppendBatchArgs(dst []byte, a *BatchArgs) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, a.RingID)
	dst = binary.AppendUvarint(dst, uint64(a.Shard))
	dst = binary.AppendUvarint(dst, a.Session)
	dst = binary.AppendUvarint(dst, a.Seq)
	dst = binary.AppendUvarint(dst, uint64(len(a.Ops)))
	for i := range a.Ops {
		op := &a.Ops[i]
		dst = append(dst, byte(op.Code))
		dst = binary.AppendUvarint(dst, uint64(len(op.Key)))
		dst = append(dst, op.Key...)
		switch op.Code {
		case OpPut:
			dst = binary.AppendUvarint(dst, uint64(len(op.Value)))
			dst = append(dst, op.Value...)
		case OpPutIf:
			dst = append(dst, byte(op.Cond))
			dst = binary.AppendUvarint(dst, uint64(len(op.Expect)))
			dst = append(dst, op.Expect...)
			dst = binary.AppendUvarint(dst, uint64(len(op.Value)))
			dst = append(dst, op.Value...)
		}
	}
	return dst
}

// AppendBatchReply appends the encoding of r to dst and returns the result.
func AppendBatchReply(dst []byte, r *BatchReply) []byte {
	dst = appendBatchReplyHead(dst, r)
	for i := range r.Results {
		res := &r.Results[i]
		dst = append(dst, byte(res.Status))
		dst = binary.AppendUvarint(dst, uint64(len(res.Value)))
		dst = append(dst, res.Value...)
	}
	return dst
}

// appendBatchReplyHead appends what precedes r's results in its encoding.
func appendBatchReplyHead(dst []byte, r *BatchReply) []byte {
	dst = append(dst, byte(r.Status))
	dst = binary.AppendUvarint(dst, uint64(len(r.Err)))
	dst = append(dst, r.Err...)
	dst = binary.AppendUvarint(dst, uint64(len(r.Leader)))
	dst = append(dst, r.Leader...)
	return binary.AppendUvarint(dst, uint64(len(r.Results)))
}

// batchReplyLen is the length of AppendBatchReply's encoding of r.
func batchReplyLen(r *BatchReply) int {
	n := 1 + uvarintLen(len(r.Err)) + len(r.Err) + uvarintLen(len(r.Leader)) + len(r.Leader) + uvarintLen(len(r.Results))
	for i := range r.Results {
		n += 1 + uvarintLen(len(r.Results[i].Value)) + len(r.Results[i].Value)
	}
	return n
}

// uvarintLen is the length of binary.AppendUvarint's encoding of n.
func uvarintLen(n int) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
}

// reader walks a body string. Every method checks bounds, so no input can
// make it read past the end or allocate more than the body's size.
type reader struct {
	s   string
	off int
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s at byte %d", ErrMalformed, fmt.Sprintf(format, args...), r.off)
	}
}

func (r *reader) byte() byte {
	if r.err != nil || r.off >= len(r.s) {
		r.fail("truncated")
		return 0
	}
	b := r.s[r.off]
	r.off++
	return b
}

func (r *reader) uint64() uint64 {
	if r.err != nil || len(r.s)-r.off < 8 {
		r.fail("truncated")
		return 0
	}
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(r.s[r.off+i])
	}
	r.off += 8
	return v
}

func (r *reader) uvarint() uint64 {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		b := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v
		}
	}
	r.fail("varint overflows 64 bits")
	return 0
}

// str returns the next length-prefixed string, aliasing the body.
func (r *reader) str() string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.s)-r.off) {
		r.fail("length %d runs past the end", n)
		return ""
	}
	s := r.s[r.off : r.off+int(n)]
	r.off += int(n)
	return s
}

// count reads an element count and checks it against max and against the
// bytes left, given that every element takes at least minBytes.
func (r *reader) count(max, minBytes int) int {
	n := r.uvarint()
	if r.err != nil {
		return 0
	}
	if n > uint64(max) {
		r.fail("count %d over the limit %d", n, max)
		return 0
	}
	if n*uint64(minBytes) > uint64(len(r.s)-r.off) {
		r.fail("count %d does not fit in %d bytes", n, len(r.s)-r.off)
		return 0
	}
	return int(n)
}

func (r *reader) finish() error {
	if r.err == nil && r.off != len(r.s) {
		r.fail("%d trailing bytes", len(r.s)-r.off)
	}
	return r.err
}

// ErrTooManyOps is returned (wrapped) by DecodeBatchArgs for a batch with
// more than MaxBatchOps ops. It is distinct from ErrMalformed so that the
// server can answer StatusTooLarge.
var ErrTooManyOps = errors.New("wire: too many ops in batch")

// DecodeBatchArgs decodes body into a. Op codes, conditions, keys and
// values are not validated here (see Op.Check), only the framing: an
// unknown op code carries only a key, so the rest of a batch after one
// still decodes. On error, a is left in an
// unspecified state. The ops' keys and values share one copy of body.
func DecodeBatchArgs(body []byte, a *BatchArgs) error {
	return decodeBatchArgs(string(body), a)
}

// DecodeBatchArgsAliasing is DecodeBatchArgs without the copy: the ops'
// keys and values alias body, whose bytes must not change while any of
// them is in use. A replica's state machine decodes its log entries so,
// since nothing changes an entry once it is in the log and the store
// copies what it keeps, and the server codec each request, read into a
// buffer of its own.
func DecodeBatchArgsAliasing(body []byte, a *BatchArgs) error {
	return decodeBatchArgs(unsafe.String(unsafe.SliceData(body), len(body)), a)
}

func decodeBatchArgs(body string, a *BatchArgs) error {
	r := reader{s: body}
	a.RingID = r.uint64()
	if sh := r.uvarint(); sh > 1<<32-1 {
		r.fail("shard %d over 32 bits", sh)
	} else {
		a.Shard = uint32(sh)
	}
	a.Session = r.uvarint()
	a.Seq = r.uvarint()
	// Peek at the count to tell "too many" from "malformed".
	save := r.off
	if n := r.uvarint(); r.err == nil && n > MaxBatchOps {
		return fmt.Errorf("%w: %d ops, limit %d", ErrTooManyOps, n, MaxBatchOps)
	}
	r.off = save
	n := r.count(MaxBatchOps, 2) // code + key length
	if cap(a.Ops) >= n {
		a.Ops = a.Ops[:n]
	} else {
		a.Ops = make([]Op, n)
	}
	for i := 0; i < n && r.err == nil; i++ {
		op := &a.Ops[i]
		op.Code = OpCode(r.byte())
		op.Key = r.str()
		op.Cond, op.Value, op.Expect = 0, "", ""
		switch op.Code {
		case OpPut:
			op.Value = r.str()
		case OpPutIf:
			op.Cond = Cond(r.byte())
			op.Expect = r.str()
			op.Value = r.str()
		}
	}
	return r.finish()
}

// DecodeBatchReply decodes body into rep. Values alias one copy of body.
func DecodeBatchReply(body []byte, rep *BatchReply) error {
	return decodeBatchReply(string(body), rep)
}

// DecodeBatchReplyAliasing is DecodeBatchReply without the copy: the
// values alias body, whose bytes must not change while any of them is in
// use.
func DecodeBatchReplyAliasing(body []byte, rep *BatchReply) error {
	return decodeBatchReply(unsafe.String(unsafe.SliceData(body), len(body)), rep)
}

func decodeBatchReply(body string, rep *BatchReply) error {
	r := reader{s: body}
	rep.Status = Status(r.byte())
	rep.Err = r.str()
	rep.Leader = r.str()
	n := r.count(MaxBatchOps, 2) // status + value length
	if cap(rep.Results) >= n {
		rep.Results = rep.Results[:n]
	} else {
		rep.Results = make([]Result, n)
	}
	for i := 0; i < n && r.err == nil; i++ {
		rep.Results[i] = Result{Status: Status(r.byte()), Value: r.str()}
	}
	return r.finish()
}
