package wire

import "fmt"

// Conditional writes.
//
// One op kind, OpPutIf, carries every conditional write; its Cond field
// says what must hold for Value to be written. One kind with a condition
// keeps the codec, the replicated path and the checkers to one more case
// each, where an op kind per condition (compare-and-set, put-if-absent,
// put-if-present, get-and-set) would have added four.
//
// The condition is decided where the write is applied: in a replicated
// shard, by the state machine as it applies the log entry (so every
// replica decides alike, and a leader never decides on a state that the
// log may yet change), and in a memory-only server under the store's lock
// of the key. It is atomic with every other op on the key.
//
// The result says whether the write happened and what the key held when
// the condition was decided, so one op serves compare-and-set loops
// (a failed CAS returns the value to retry with), locks (who holds it),
// and Redis's SET NX|XX, SETNX, GETSET and SET ... GET:
//
//	status                  applied  key held before     Result.Value
//	StatusOK                yes      a value             that value
//	StatusNotFound          yes      nothing             ""
//	StatusMismatch          no       a value             that value
//	StatusMismatchNotFound  no       nothing             ""
//
// (So Status.Applied, Status.Present and Status.Mismatch read the same
// way for an OpPutIf as for a get.) A retried batch in a replicated shard
// is answered with the results it got the first time; the write is not
// decided again.
//
// Examples:
//
//	{Code: OpPutIf, Cond: CondEqual, Key: "n", Expect: "41", Value: "42"} // CAS
//	{Code: OpPutIf, Cond: CondAbsent, Key: "lock", Value: "owner-7"}     // SET NX, SETNX
//	{Code: OpPutIf, Cond: CondPresent, Key: "k", Value: "v"}             // SET XX
//	{Code: OpPutIf, Cond: CondAlways, Key: "k", Value: "v"}              // GETSET, SET ... GET

// Cond is the condition of an OpPutIf. Zero is deliberately not a
// condition, so an OpPutIf without one is rejected (StatusBadOp).
type Cond uint8

// The conditions an OpPutIf may carry.
const (
	CondEqual   Cond = 1 // Key is present and holds Expect (compare-and-set)
	CondAbsent  Cond = 2 // Key is absent (SET NX, SETNX)
	CondPresent Cond = 3 // Key is present, whatever its value (SET XX)
	CondAlways  Cond = 4 // always: a put that returns the previous value (GETSET, SET ... GET)
)

// String names the condition for logs and errors.
func (c Cond) String() string {
	switch c {
	case CondEqual:
		return "equal"
	case CondAbsent:
		return "absent"
	case CondPresent:
		return "present"
	case CondAlways:
		return "always"
	default:
		return fmt.Sprintf("cond(%d)", uint8(c))
	}
}

// Decide returns the status of an OpPutIf, which passed Check, on a key
// that holds current (present) or nothing (!present): StatusOK or
// StatusNotFound when the op is to be applied, StatusMismatch or
// StatusMismatchNotFound when not. Stores call it under the lock of the
// key, so the decision and the write are one atomic step.
func (op *Op) Decide(current string, present bool) Status {
	var holds bool
	switch op.Cond {
	case CondEqual:
		holds = present && current == op.Expect
	case CondAbsent:
		holds = !present
	case CondPresent:
		holds = present
	case CondAlways:
		holds = true
	}
	switch {
	case holds && present:
		return StatusOK
	case holds:
		return StatusNotFound
	case present:
		return StatusMismatch
	}
	return StatusMismatchNotFound
}
