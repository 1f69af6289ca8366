package workload

import (
	"unsafe"

	"github.com/batchkv/batchkv/wire"
)

// NextBatch fills ops with the next len(ops) draws: a get for a read, a
// put of value(j) for op j otherwise. The keys are formatted back to back
// into keys (emptied first), which the ops' keys alias; NextBatch returns
// it, grown if it had to be, for the next call. So the ops are valid until
// keys is reused: a caller that sends them (client.DoInto encodes them
// before it returns) may reuse both for its next batch, and a batch costs
// no allocation.
func (g *Generator) NextBatch(ops []wire.Op, keys []byte, value func(j int) string) []byte {
	keys = keys[:0]
	for j := range ops {
		op := g.Next()
		at := len(keys)
		keys = AppendKey(keys, op.Record)
		// A key is never empty, and bytes already handed out are never
		// written again: append only writes past them.
		key := unsafe.String(&keys[at], len(keys)-at)
		if op.Read {
			ops[j] = wire.Op{Code: wire.OpGet, Key: key}
		} else {
			ops[j] = wire.Op{Code: wire.OpPut, Key: key, Value: value(j)}
		}
	}
	return keys
}
