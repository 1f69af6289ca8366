package store

import (
	"iter"
	"unsafe"

	"github.com/batchkv/batchkv/wire"
)

// Apply applies ops to s in order and writes op i's result to results[i].
// An op that fails wire.Op.Check gets that status and changes nothing.
// The values read (by gets, and the values conditional puts found) are
// copied into vals, which the results' values then alias; a get or
// conditional put whose value vals refuses (over its Limit) answers
// wire.StatusTooLarge instead, and the conditional put is not applied, so
// that a reply stays within a frame.
//
// A store with a Batcher applies a batch of valid ops in one call; any
// other store, or a batch with an invalid op, is applied op by op.
func Apply(s Store, ops []wire.Op, results []wire.Result, vals *Values) {
	ApplyAt(s, ops, nil, results, vals)
}

// ApplyAt is Apply of some of ops: those whose indexes at lists, each
// writing its result at its own index in results; ops on one key take
// effect in the order at lists them, and the other ops and results are
// left alone. A nil at means every op, an empty one none. It saves a
// caller that serves part of a batch from copying that part out and its
// results back.
func ApplyAt(s Store, ops []wire.Op, at []int32, results []wire.Result, vals *Values) {
	if b, ok := s.(Batcher); ok && allValid(ops, at) {
		b.ApplyBatchAt(ops, at, results, vals)
		return
	}
	var buf []byte
	for i := range Selected(len(ops), at) {
		op := &ops[i]
		if st := op.Check(); st != wire.StatusOK {
			results[i] = wire.Result{Status: st}
			continue
		}
		switch op.Code {
		case wire.OpGet:
			var found bool
			if buf, found = s.AppendGet(buf[:0], op.Key); !found {
				results[i] = wire.Result{Status: wire.StatusNotFound}
			} else if v, ok := vals.Add(buf); ok {
				results[i] = wire.Result{Status: wire.StatusOK, Value: v}
			} else {
				results[i] = wire.Result{Status: wire.StatusTooLarge}
			}
		case wire.OpPut:
			s.Put(op.Key, op.Value)
			results[i] = wire.Result{Status: wire.StatusOK}
		case wire.OpDelete:
			s.Delete(op.Key)
			results[i] = wire.Result{Status: wire.StatusOK}
		case wire.OpPutIf:
			results[i] = s.PutIf(op, vals)
		}
	}
}

// Selected yields the indexes that at lists, in order, or, for a nil at,
// every index below n: the ops of a batch of n that ApplyAt applies.
func Selected(n int, at []int32) iter.Seq[int] {
	return func(yield func(int) bool) {
		if at == nil {
			for i := range n {
				if !yield(i) {
					return
				}
			}
			return
		}
		for _, i := range at {
			if !yield(int(i)) {
				return
			}
		}
	}
}

// allValid reports whether every op of ops that at lists (every op, for a
// nil at) passes wire.Op.Check.
func allValid(ops []wire.Op, at []int32) bool {
	for i := range Selected(len(ops), at) {
		if ops[i].Check() != wire.StatusOK {
			return false
		}
	}
	return true
}

// PutBytes sets key to value in s without first copying them into
// strings of their own: a Store copies whatever it keeps, so the caller
// may reuse both buffers once PutBytes returns.
func PutBytes(s Store, key, value []byte) { s.Put(aliasString(key), aliasString(value)) }

// aliasString returns b as a string without copying it. The caller must
// never modify b's bytes again while the string is in use.
func aliasString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// stringBytes returns the bytes of s without copying them; they must not
// be modified.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
