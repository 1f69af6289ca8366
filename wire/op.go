package wire

import "fmt"

// OpCode says what an Op does.
type OpCode uint8

// The operations a batch may carry. Zero is deliberately not an op, so an
// uninitialised Op is rejected rather than read as a get.
const (
	OpGet    OpCode = 1 // read Key; the result carries its value
	OpPut    OpCode = 2 // set Key to Value
	OpDelete OpCode = 3 // remove Key; deleting a missing key is OK
	OpPutIf  OpCode = 4 // set Key to Value if Cond holds (see Cond); the result carries the value Key held
)

// String names the op code for logs and errors.
func (c OpCode) String() string {
	switch c {
	case OpGet:
		return "get"
	case OpPut:
		return "put"
	case OpDelete:
		return "delete"
	case OpPutIf:
		return "put-if"
	default:
		return fmt.Sprintf("op(%d)", uint8(c))
	}
}

// Op is one operation of a batch. Value is used by OpPut and OpPutIf,
// Cond and Expect by OpPutIf only; other ops ignore them.
type Op struct {
	Code  OpCode
	Cond  Cond
	Key   string
	Value string
	// Expect is the value Key must hold for CondEqual; it must be empty
	// for every other condition.
	Expect string
}

// Status is the outcome of one op, or of a whole batch.
type Status uint8

// Statuses. Anything but StatusOK and StatusNotFound means the op was not
// applied.
const (
	StatusOK        Status = 0 // applied; for a get, the key was present
	StatusNotFound  Status = 1 // a get of a key that is not present
	StatusBadOp     Status = 2 // unknown op code; not applied
	StatusBadKey    Status = 3 // empty key; not applied
	StatusTooLarge  Status = 4 // key, value or batch over the limits; not applied
	StatusWrongRing Status = 5 // the server's ring differs from the sender's and it could not forward
	StatusUnavail   Status = 6 // the owner of the key could not be reached; not applied
	StatusNotLeader Status = 7 // this replica does not lead the op's shard; not applied (see BatchReply.Leader)
	StatusUnknown   Status = 8 // a write whose replication outcome is unknown: it may or may not have been applied
	StatusMoved     Status = 9 // this server hosts no replica of the op's shard under its map; not applied (the sender's map is stale: BatchReply.Leader names a replica)
	// The two outcomes of an OpPutIf whose condition did not hold (see
	// Cond); the op was not applied.
	StatusMismatch         Status = 10 // Key is present: Result.Value is its current value
	StatusMismatchNotFound Status = 11 // Key is absent
	// StatusNoSpace answers a write to a shard a majority of whose
	// replicas have full disks; not applied (reads are still served).
	StatusNoSpace Status = 12
	// StatusNoMemory answers a write that would take the server's stores
	// past their share of its -max-memory; not applied (reads and deletes
	// are still served). Redis answers the same case with its OOM error.
	StatusNoMemory Status = 13
)

// String names the status for logs and errors.
func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusNotFound:
		return "not found"
	case StatusBadOp:
		return "unknown op code"
	case StatusBadKey:
		return "empty key"
	case StatusTooLarge:
		return "too large"
	case StatusWrongRing:
		return "wrong ring"
	case StatusUnavail:
		return "owner unavailable"
	case StatusNotLeader:
		return "not the leader"
	case StatusUnknown:
		return "outcome unknown"
	case StatusMoved:
		return "moved"
	case StatusMismatch:
		return "condition not met"
	case StatusMismatchNotFound:
		return "condition not met (key absent)"
	case StatusNoSpace:
		return "no space"
	case StatusNoMemory:
		return "no memory"
	default:
		return fmt.Sprintf("status(%d)", uint8(s))
	}
}

// Applied reports whether an op with this status took effect (or, for a
// get, was answered).
func (s Status) Applied() bool { return s == StatusOK || s == StatusNotFound }

// Decided reports whether an op with this status got a final answer: it
// was applied, or it was an OpPutIf whose condition did not hold.
func (s Status) Decided() bool { return s.Applied() || s.Mismatch() }

// Mismatch reports whether s says an OpPutIf's condition did not hold.
func (s Status) Mismatch() bool { return s == StatusMismatch || s == StatusMismatchNotFound }

// Present reports whether a decided get or OpPutIf found its key: StatusOK
// and StatusMismatch say it was present, StatusNotFound and
// StatusMismatchNotFound that it was absent.
func (s Status) Present() bool { return s == StatusOK || s == StatusMismatch }

// Result is the outcome of one op. Value is set for a get with StatusOK,
// and for an OpPutIf that found its key (StatusOK or StatusMismatch): the
// value the key held when the op was decided.
type Result struct {
	Status Status
	Value  string
}

// BatchArgs is the request of KVService.BatchOp.
type BatchArgs struct {
	// RingID identifies the ring the sender routed the batch with (see
	// ring.Ring.ID). When it equals the server's own, the server trusts the
	// routing and applies every op locally; otherwise (zero included) it
	// checks each key and forwards ops that other servers own.
	RingID uint64
	// Shard is the shard every op of the batch belongs to, for a
	// replicated cluster (RF > 1); zero otherwise.
	Shard uint32
	// Session and Seq make a replicated batch's writes apply exactly once.
	// A session (unique per client, one batch in flight at a time) numbers
	// its batches 1, 2, ...; a batch resent with the same Session and Seq
	// after a lost reply is not applied again. Session zero opts out.
	Session uint64
	Seq     uint64
	// Ops are applied in order.
	Ops []Op
}

// BatchReply is the reply of KVService.BatchOp.
type BatchReply struct {
	// Status is StatusOK when the ops were processed, in which case Results
	// has one entry per op. Otherwise the whole batch was rejected, nothing
	// was applied, Results is empty and Err says why.
	Status Status
	Err    string
	// Leader is set by a replica that answered StatusNotLeader for some
	// ops: the address of the shard's leader as far as it knows, or empty
	// when it knows none (an election is under way).
	Leader  string
	Results []Result
}

// SmallBatchOps is the most ops of a small batch: one that a server whose
// store answers without waiting on a peer serves in the goroutine that
// read it, and that a lone client call may poll for (client.LoneOps).
const SmallBatchOps = 32

// Limits bound what one request may carry. Both sides enforce them.
const (
	// MaxKeyBytes is the longest key accepted.
	MaxKeyBytes = 4 << 10
	// MaxValueBytes is the longest value accepted.
	MaxValueBytes = 1 << 20
	// MaxBatchOps is the most ops one batch may carry.
	MaxBatchOps = 1 << 16
	// MaxFrameBytes is the largest encoded request or reply frame. A batch
	// whose encoding is larger is rejected whole.
	MaxFrameBytes = 64 << 20
)

// Check returns the status an op gets before it is applied: StatusOK when
// it is well formed and within the limits. An OpPutIf with an unknown
// condition, or with Expect set for a condition other than CondEqual, is
// StatusBadOp; one whose Expect is over MaxValueBytes is StatusTooLarge.
func (op *Op) Check() Status {
	switch {
	case op.Code < OpGet || op.Code > OpPutIf:
		return StatusBadOp
	case op.Key == "":
		return StatusBadKey
	case len(op.Key) > MaxKeyBytes, len(op.Value) > MaxValueBytes:
		return StatusTooLarge
	case op.Code == OpPutIf:
		return op.checkCond()
	}
	return StatusOK
}

func (op *Op) checkCond() Status {
	switch {
	case op.Cond < CondEqual || op.Cond > CondAlways:
		return StatusBadOp
	case op.Cond != CondEqual && op.Expect != "":
		return StatusBadOp
	case len(op.Expect) > MaxValueBytes:
		return StatusTooLarge
	}
	return StatusOK
}
