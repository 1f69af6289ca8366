package wire

// MaxEntryBytes bounds the ops of one replicated request to one shard
// when any of them writes, by BatchArgsBound: such a request becomes one
// Raft log entry, and hashicorp/raft's transport decodes an entry's bytes
// into a buffer it grows 256 KiB at a time, copying at each step, so an
// entry of n bytes costs about n²/512 KiB of copying on every follower.
// Here one entry of 1 MiB decodes at 480-800 MB/s, one of 45 MiB at
// 37-40 MB/s (docs/results.md, "Large entries"). A server refuses the writes
// of a larger request of more than one op with StatusTooLarge; the client
// library cuts a larger part into requests within the bound (EntryCuts).
const MaxEntryBytes = 1 << 20

// OverEntryBound says whether ops, all for one shard, would make a log
// entry past MaxEntryBytes: more than one op, and over the bound.
func OverEntryBound(ops []Op) bool {
	return len(ops) > 1 && BatchArgsBound(ops) > MaxEntryBytes
}

// EntryCuts returns where to cut ops, all for one shard, into runs that
// a server takes: runs ops[cuts[i]:cuts[i+1]], each within MaxEntryBytes
// or of one op. Ops that do not write, which make no entry, are one run
// whatever their size, as is a part within the bound.
func EntryCuts(ops []Op) []int {
	writes := false
	for i := range ops {
		if ops[i].Code != OpGet {
			writes = true
			break
		}
	}
	if !writes || !OverEntryBound(ops) {
		return []int{0, len(ops)}
	}
	cuts := []int{0}
	header := BatchArgsBound(nil)
	n := header
	for i := range ops {
		size := BatchArgsBound(ops[i:i+1]) - header
		if i > cuts[len(cuts)-1] && n+size > MaxEntryBytes {
			cuts = append(cuts, i)
			n = header
		}
		n += size
	}
	return append(cuts, len(ops))
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
