package autobatch

import (
	"slices"

	"github.com/batchkv/batchkv/wire"
)

// Resendable returns the indexes of the ops of part (one caller's run)
// that may be sent again alone after a shared batch answered them with
// res: those ReadRefused, and those DeleteRefused when part has no put of
// its own, whose key no other op of part touches, so that none moves
// past another op of the caller on its key.
func Resendable(part []wire.Op, res []wire.Result) []int {
	var again []int
	puts := slices.ContainsFunc(part, func(op wire.Op) bool { return op.Code == wire.OpPut || op.Code == wire.OpPutIf })
	for j := range part {
		if ReadRefused(&part[j], res[j]) || !puts && DeleteRefused(&part[j], res[j]) {
			again = append(again, j)
		}
	}
	if len(again) == 0 {
		return nil
	}
	uses := make(map[string]int, len(part))
	for j := range part {
		uses[part[j].Key]++
	}
	return slices.DeleteFunc(again, func(j int) bool { return uses[part[j].Key] > 1 })
}

// DeleteRefused says whether res is op's answer when its batch's puts
// were refused for memory: a delete answered StatusNoMemory, not
// applied, since a batch's writes are one log entry. In a batch that
// other callers' puts shared, it is taken alone.
func DeleteRefused(op *wire.Op, res wire.Result) bool {
	return res.Status == wire.StatusNoMemory && op.Code == wire.OpDelete
}

// ReadRefused says whether res is op's answer when the values its batch
// read were over the server's cap (kvs/backend's Applier): a get or a
// conditional put, not applied, answered StatusTooLarge. In a batch that
// other callers' gets shared, it may fit alone.
func ReadRefused(op *wire.Op, res wire.Result) bool {
	return res.Status == wire.StatusTooLarge && (op.Code == wire.OpGet || op.Code == wire.OpPutIf)
}

// Checked answers each op of ops that fails wire.Op.Check with its status
// in results, and returns the others, which may share a batch without
// failing it; where maps their indexes to ops', and is nil when every op
// passed.
func Checked(ops []wire.Op, results []wire.Result) (valid []wire.Op, where []int32) {
	for i := range ops {
		st := ops[i].Check()
		if st == wire.StatusOK {
			if where != nil {
				valid, where = append(valid, ops[i]), append(where, int32(i))
			}
			continue
		}
		results[i] = wire.Result{Status: st}
		if where == nil {
			valid, where = slices.Clone(ops[:i]), make([]int32, i, len(ops))
			for j := range i {
				where[j] = int32(j)
			}
		}
	}
	if where == nil {
		return ops, nil
	}
	return valid, where
}
