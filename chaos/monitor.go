package chaos

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/wire"
)

// pollEvery is how often the monitor asks every server for its status.
const pollEvery = 200 * time.Millisecond

// sample is one server's answer to one status poll.
type sample struct {
	at     time.Duration
	server int
	ok     bool
	shards []wire.ShardStatus
}

// monitor polls every server's view of its shards while a run goes on,
// so that leaders, terms, elections and catch-up can be read off later.
type monitor struct {
	addrs []string
	admin client.Admin
	tl    *timeline
	mu    sync.Mutex
	ss    []sample // guarded by mu
}

func (m *monitor) run(stop <-chan struct{}) {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		m.poll()
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

func (m *monitor) poll() {
	var wg sync.WaitGroup
	for i, addr := range m.addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := m.admin.Status(addr, wire.StatusRequest{}, 2*pollEvery)
			at := m.tl.since() // the state is at least this fresh
			m.mu.Lock()
			m.ss = append(m.ss, sample{at: at, server: i, ok: err == nil, shards: st.Shards})
			m.mu.Unlock()
		}()
	}
	wg.Wait()
}

// samples returns every sample so far, in time order (polls run
// concurrently and finish out of order).
func (m *monitor) samples() []sample {
	m.mu.Lock()
	ss := append([]sample(nil), m.ss...)
	m.mu.Unlock()
	slices.SortStableFunc(ss, func(a, b sample) int { return cmp.Compare(a.at, b.at) })
	return ss
}

func shardOf(s sample, sh int) (wire.ShardStatus, bool) {
	for _, st := range s.shards {
		if st.Shard == sh {
			return st, true
		}
	}
	return wire.ShardStatus{}, false
}

// view is the cluster's state of one shard at one poll: the leader of the
// highest term any server claims leadership in, and that term.
type view struct {
	at     time.Duration
	leader int // -1: none
	term   uint64
}

// views returns, per poll round, the leader and the highest term of shard
// sh seen by any server.
func views(ss []sample, sh int) []view {
	var out []view
	for i := 0; i < len(ss); {
		j := i
		v := view{at: ss[i].at, leader: -1}
		var leaderTerm uint64
		for ; j < len(ss) && ss[j].at-ss[i].at < pollEvery/2; j++ {
			st, ok := shardOf(ss[j], sh)
			if !ss[j].ok || !ok {
				continue
			}
			v.term = max(v.term, st.Term)
			if st.State == "Leader" && st.Term >= leaderTerm {
				v.leader, leaderTerm = ss[j].server, st.Term
			}
		}
		out = append(out, v)
		i = j
	}
	return out
}

// termChanges counts how far shard sh's highest term rose in [from, to)
// above the term known just before from (or the window's first).
func termChanges(vs []view, from, to time.Duration) uint64 {
	var base, top uint64
	for _, v := range vs {
		switch {
		case v.term == 0 || v.at >= to:
		case v.at < from:
			base = max(base, v.term)
		default:
			top = max(top, v.term)
			if base == 0 {
				base = v.term
			}
		}
	}
	if top <= base {
		return 0
	}
	return top - base
}

// leaderChanges counts the times shard sh's known leader changed in
// [from, to); polls that saw no leader are skipped.
func leaderChanges(vs []view, from, to time.Duration) int {
	n, cur := 0, -1
	for _, v := range vs {
		if v.at < from || v.at >= to || v.leader < 0 {
			continue
		}
		if cur >= 0 && v.leader != cur {
			n++
		}
		cur = v.leader
	}
	return n
}

// leaderAt returns shard sh's leader at the last poll before t, or -1.
func leaderAt(vs []view, t time.Duration) int {
	l := -1
	for _, v := range vs {
		if v.at > t {
			break
		}
		if v.leader >= 0 {
			l = v.leader
		}
	}
	return l
}

// caughtUp returns how long after t server's replica of shard sh first
// applied everything the shard's leader had committed at t, or false.
func caughtUp(ss []sample, vs []view, sh, server int, t time.Duration) (time.Duration, bool) {
	var target uint64
	for _, s := range ss {
		st, ok := shardOf(s, sh)
		if s.at >= t && s.ok && ok && st.State == "Leader" {
			target = st.Commit
			break
		}
	}
	if target == 0 {
		return 0, false
	}
	for _, s := range ss {
		st, ok := shardOf(s, sh)
		if s.at >= t && s.server == server && s.ok && ok && st.Applied >= target {
			return s.at - t, true
		}
	}
	return 0, false
}

// firstNotLeader returns how long after from server was first seen not
// leading shard sh, or false.
func firstNotLeader(ss []sample, sh, server int, from time.Duration) (time.Duration, bool) {
	for _, s := range ss {
		st, ok := shardOf(s, sh)
		if s.at >= from && s.server == server && s.ok && ok && st.State != "Leader" {
			return s.at - from, true
		}
	}
	return 0, false
}

// restoresOf returns the snapshot restores server's replica of shard sh
// reported at its last poll in [from, to).
func restoresOf(ss []sample, sh, server int, from, to time.Duration) uint64 {
	var r uint64
	for _, s := range ss {
		st, ok := shardOf(s, sh)
		if s.at >= from && s.at < to && s.server == server && s.ok && ok {
			r = st.Restores
		}
	}
	return r
}
