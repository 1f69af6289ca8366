package store

import (
	"unsafe"

	"github.com/batchkv/batchkv/wire"
)

// Apply applies ops to s in order and writes op i's result to results[i].
// An op that fails wire.Op.Check gets that status and changes nothing.
// The values read are copied into vals, which the results' values then
// alias; a get whose value vals refuses (over its Limit) answers
// wire.StatusTooLarge instead, so that a reply stays within a frame.
//
// A store with a Batcher applies a batch of valid ops in one call; any
// other store, or a batch with an invalid op, is applied op by op.
func Apply(s Store, ops []wire.Op, results []wire.Result, vals *Values) {
	if b, ok := s.(Batcher); ok && allValid(ops) {
		b.ApplyBatch(ops, results, vals)
		return
	}
	var buf []byte
	for i := range ops {
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
		}
	}
}

func allValid(ops []wire.Op) bool {
	for i := range ops {
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
