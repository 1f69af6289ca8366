package wire

// MaxEntryBytes bounds the ops of one replicated request to one shard
// when any of them writes, by BatchArgsBound: such a request becomes one
// Raft log entry, and hashicorp/raft's transport decodes an entry's bytes
// into a buffer it grows 256 KiB at a time, copying at each step, so an
// entry of n bytes costs about n²/512 KiB of copying on every follower.
// Here one entry of 1 MiB decodes at 480-800 MB/s, one of 45 MiB at
// 37-40 MB/s (docs/results.md, "Large entries"). A server refuses the writes
// of a larger request of more than one op with StatusTooLarge
// (EntryBound); the client library cuts a larger part into requests
// within the bound (EntryCuts).
const MaxEntryBytes = 1 << 20

// EntryBound returns BatchArgsBound(ops) for ops, all for one shard,
// and whether they would make a log entry past MaxEntryBytes: more than
// one op, and over the bound.
func EntryBound(ops []Op) (size int, over bool) {
	size = BatchArgsBound(ops)
	return size, len(ops) > 1 && size > MaxEntryBytes
}

// EntryCuts returns where to cut ops, all for one shard, into runs that
// a server takes: runs ops[cuts[i]:cuts[i+1]], each within MaxEntryBytes
// or of one op, and sizes[i], the BatchArgsBound of run i. Ops that do
// not write, which make no entry, are one run whatever their size, as is
// a part within the bound.
func EntryCuts(ops []Op) (cuts, sizes []int) {
	size, writes := batchHeaderBound, false
	for i := range ops {
		size += ops[i].bound()
		writes = writes || ops[i].Code != OpGet
	}
	if !writes || len(ops) < 2 || size <= MaxEntryBytes {
		return []int{0, len(ops)}, []int{size}
	}
	cuts = []int{0}
	n := batchHeaderBound
	for i := range ops {
		b := ops[i].bound()
		if i > cuts[len(cuts)-1] && n+b > MaxEntryBytes {
			cuts, sizes = append(cuts, i), append(sizes, n)
			n = batchHeaderBound
		}
		n += b
	}
	return append(cuts, len(ops)), append(sizes, n)
}

// DistinctKeys says whether no two of ops have the same key.
func DistinctKeys(ops []Op) bool {
	seen := make(map[string]struct{}, len(ops))
	for i := range ops {
		if _, ok := seen[ops[i].Key]; ok {
			return false
		}
		seen[ops[i].Key] = struct{}{}
	}
	return true
}
