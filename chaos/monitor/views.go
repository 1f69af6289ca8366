package monitor

import (
	"time"

	"github.com/batchkv/batchkv/wire"
)

// shardOf returns s's status of shard sh, if it has one.
func shardOf(s Sample, sh int) (wire.ShardStatus, bool) {
	for _, st := range s.Shards {
		if st.Shard == sh {
			return st, true
		}
	}
	return wire.ShardStatus{}, false
}

// View is the cluster's state of one shard at one poll: the leader of the
// highest term any server claims leadership in, and that term.
type View struct {
	At     time.Duration
	Leader int // -1: none
	Term   uint64
}

// Views returns, per poll round, the leader and the highest term of shard
// sh seen by any server.
func Views(ss []Sample, sh int) []View {
	var out []View
	for i := 0; i < len(ss); {
		j := i
		v := View{At: ss[i].At, Leader: -1}
		var leaderTerm uint64
		for ; j < len(ss) && ss[j].At-ss[i].At < PollEvery/2; j++ {
			st, ok := shardOf(ss[j], sh)
			if !ss[j].OK || !ok {
				continue
			}
			v.Term = max(v.Term, st.Term)
			if st.State == "Leader" && st.Term >= leaderTerm {
				v.Leader, leaderTerm = ss[j].Server, st.Term
			}
		}
		out = append(out, v)
		i = j
	}
	return out
}

// TermChanges counts how far shard sh's highest term rose in [from, to)
// above the term known just before from (or the window's first).
func TermChanges(vs []View, from, to time.Duration) uint64 {
	var base, top uint64
	for _, v := range vs {
		switch {
		case v.Term == 0 || v.At >= to:
		case v.At < from:
			base = max(base, v.Term)
		default:
			top = max(top, v.Term)
			if base == 0 {
				base = v.Term
			}
		}
	}
	if top <= base {
		return 0
	}
	return top - base
}

// LeaderChanges counts the times shard sh's known leader changed in
// [from, to); polls that saw no leader are skipped.
func LeaderChanges(vs []View, from, to time.Duration) int {
	n, cur := 0, -1
	for _, v := range vs {
		if v.At < from || v.At >= to || v.Leader < 0 {
			continue
		}
		if cur >= 0 && v.Leader != cur {
			n++
		}
		cur = v.Leader
	}
	return n
}

// LeaderAt returns shard sh's leader at the last poll before t, or -1.
func LeaderAt(vs []View, t time.Duration) int {
	l := -1
	for _, v := range vs {
		if v.At > t {
			break
		}
		if v.Leader >= 0 {
			l = v.Leader
		}
	}
	return l
}

// CaughtUp returns how long after t server's replica of shard sh first
// applied everything the shard's leader had committed at t, or false.
func CaughtUp(ss []Sample, vs []View, sh, server int, t time.Duration) (time.Duration, bool) {
	var target uint64
	for _, s := range ss {
		st, ok := shardOf(s, sh)
		if s.At >= t && s.OK && ok && st.State == "Leader" {
			target = st.Commit
			break
		}
	}
	if target == 0 {
		return 0, false
	}
	for _, s := range ss {
		st, ok := shardOf(s, sh)
		if s.At >= t && s.Server == server && s.OK && ok && st.Applied >= target {
			return s.At - t, true
		}
	}
	return 0, false
}

// FirstNotLeader returns how long after from server was first seen not
// leading shard sh, or false.
func FirstNotLeader(ss []Sample, sh, server int, from time.Duration) (time.Duration, bool) {
	for _, s := range ss {
		st, ok := shardOf(s, sh)
		if s.At >= from && s.Server == server && s.OK && ok && st.State != "Leader" {
			return s.At - from, true
		}
	}
	return 0, false
}

// RestoresOf returns the snapshot restores server's replica of shard sh
// reported at its last poll in [from, to).
func RestoresOf(ss []Sample, sh, server int, from, to time.Duration) uint64 {
	var r uint64
	for _, s := range ss {
		st, ok := shardOf(s, sh)
		if s.At >= from && s.At < to && s.Server == server && s.OK && ok {
			r = st.Restores
		}
	}
	return r
}

// ViewAt returns the last view before t (leader -1 when there is none).
func ViewAt(vs []View, t time.Duration) View {
	v := View{Leader: -1}
	for _, x := range vs {
		if x.At > t {
			break
		}
		v = x
	}
	return v
}

// GateCounts returns the commit gate's counts (wire.ShardStatus's
// GateEntries and GateHeld) of server's replica of shard sh at its last
// poll before t.
func GateCounts(ss []Sample, sh, server int, t time.Duration) (entries, held uint64) {
	var last time.Duration = -1
	for _, s := range ss {
		if st, ok := shardOf(s, sh); ok && s.At < t && s.At > last && s.Server == server && s.OK {
			entries, held, last = st.GateEntries, st.GateHeld, s.At
		}
	}
	return entries, held
}
