package leadership

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/kvs/replica/failover"
	"github.com/batchkv/batchkv/kvs/replica/raftstore"
	"github.com/batchkv/batchkv/kvs/replica/transport"
)

// Guard is a shard's Raft transport with rules of its own: it answers
// the pre-votes that failover.RefusePreVote refuses, with a refusal,
// before Raft sees them; and with lease reads on, it refuses a TimeoutNow
// while the replica still hears from a leader (leasestand.go). Every
// other RPC goes to Raft unchanged.
type Guard struct {
	*transport.Network
	rpcs chan raft.RPC
	// abstain, when set and true, refuses every vote, pre-vote and
	// TimeoutNow: a replica being rebuilt must not vote.
	abstain func() bool
	// mayStand, when set, says whether this replica may stand for
	// election (diskfull.go): if not, it refuses TimeoutNow, and its
	// vote requests fail.
	mayStand func() bool
	// refuseHaste, when set, refuses a TimeoutNow that the lease rule
	// forbids (leasestand.go).
	refuseHaste func(*raft.TimeoutNowRequest) error
	// leaderSent is when the guard last passed an AppendEntries or
	// InstallSnapshot on to Raft: nanoseconds since epoch, by the
	// monotonic clock (0: never).
	leaderSent atomic.Int64
	epoch      time.Time
	stop       chan struct{}
	once       sync.Once
	wg         sync.WaitGroup
}

// NewGuard wraps t, the network transport of a shard's Raft node.
func NewGuard(t *transport.Network) *Guard {
	return &Guard{Network: t, rpcs: make(chan raft.RPC), stop: make(chan struct{}), epoch: time.Now()}
}

// Consumer returns the RPCs for Raft.
func (t *Guard) Consumer() <-chan raft.RPC { return t.rpcs }

// start passes the RPCs the peers send on to Raft until the guard closes.
// It calls stands just before it passes on a TimeoutNow, and voteRequest
// before it passes on a vote request, and answers there a pre-vote that
// refuse answers (its reply and true).
func (t *Guard) start(stands func(), voteRequest func(*raft.RequestVoteRequest), refuse func(*raft.RequestPreVoteRequest) (*raft.RequestPreVoteResponse, bool)) {
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		in := t.Network.Consumer()
		for {
			var rpc raft.RPC
			select {
			case rpc = <-in:
			case <-t.stop:
				return
			}
			if t.abstain != nil && t.abstain() && refuseWhileRebuilding(rpc) {
				continue
			}
			switch req := rpc.Command.(type) {
			case *raft.TimeoutNowRequest:
				if t.mayStand != nil && !t.mayStand() {
					rpc.Respond(nil, errFullNoStand)
					continue
				}
				if t.refuseHaste != nil {
					if err := t.refuseHaste(req); err != nil {
						rpc.Respond(nil, err)
						continue
					}
				}
				stands()
			case *raft.RequestVoteRequest:
				voteRequest(req)
			case *raft.RequestPreVoteRequest:
				if resp, no := refuse(req); no {
					rpc.Respond(resp, nil)
					continue
				}
			case *raft.AppendEntriesRequest, *raft.InstallSnapshotRequest:
				// Raft notes the contact only once it has handled the
				// request (stored its entries): a TimeoutNow taken off
				// the queue meanwhile must count it already.
				t.leaderSent.Store(int64(time.Since(t.epoch)))
			}
			select {
			case t.rpcs <- rpc:
			case <-t.stop:
				return
			}
		}
	}()
}

// Close stops passing RPCs on, and closes the transport.
func (t *Guard) Close() error {
	t.once.Do(func() { close(t.stop) })
	t.wg.Wait()
	return t.Network.Close()
}

// recentTerm is a term noted for a while: long enough for Raft to act on
// what the transport has just passed it, after which Raft's own state
// tells the rest.
type recentTerm struct {
	mu    sync.Mutex
	term  uint64
	until time.Time
}

// note keeps term until now+d, unless a higher term is noted and still
// kept.
func (r *recentTerm) note(term uint64, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := time.Now(); term >= r.term || !now.Before(r.until) {
		r.term, r.until = term, now.Add(d)
	}
}

// get returns the term noted, or 0 once it is no longer kept.
func (r *recentTerm) get() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Now().Before(r.until) {
		return r.term
	}
	return 0
}

// stands notes the term this replica is about to stand in, the one after
// its current term: a TimeoutNow makes Raft a candidate at once, but Raft
// writes its new term and its vote to disk only after that, each with a
// sync, and a pre-vote that arrives in between must meet the vote all
// the same. The note lasts a heartbeat timeout, after which Raft's own
// timers have taken over.
func (n *Node) stands() { n.standing.note(n.raft.CurrentTerm()+1, n.heartbeat) }

// lastVote returns the last vote this replica cast, or is about to cast
// for itself (stands); ok false when it has none on record.
func (n *Node) lastVote() (v failover.Vote, ok bool) {
	if term, cand, found := raftstore.LastVote(n.logs); found {
		v, ok = failover.Vote{Term: term, For: string(cand)}, true
	}
	if term := n.standing.get(); term > v.Term {
		v, ok = failover.Vote{Term: term, For: n.self}, true
	}
	return v, ok
}

// refusePreVote answers a pre-vote that failover.RefusePreVote refuses:
// one for a term in which this replica, a voter, has already voted for
// another candidate, or stood itself, from a peer whose log is no more up
// to date than its own.
func (n *Node) refusePreVote(req *raft.RequestPreVoteRequest) (*raft.RequestPreVoteResponse, bool) {
	// RefusePreVote checks the term too; checked here first, it spares
	// the common pre-vote (for a term not voted in) Raft's Stats.
	vote, ok := n.lastVote()
	if !ok || vote.Term < req.Term {
		return nil, false
	}
	p := failover.PreVote{From: string(req.Addr), Term: req.Term,
		Log: failover.LogPosition{Term: req.LastLogTerm, Index: req.LastLogIndex}}
	if !failover.RefusePreVote(vote, n.lastEntry(), p) || !n.voter() {
		return nil, false
	}
	n.log.Info("refused a pre-vote for a term this replica has voted in", "from", p.From, "term", p.Term,
		"voted_for", vote.For)
	return &raft.RequestPreVoteResponse{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax,
		ID: []byte(n.self), Addr: []byte(n.self)}, Term: max(n.raft.CurrentTerm(), req.Term)}, true
}

// voter reports whether this replica is a voter in its shard's latest
// configuration: only a voter can stand, and so only a voter may refuse a
// peer the pre-vote in favour of itself.
func (n *Node) voter() bool {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, s := range f.Configuration().Servers {
		if s.ID == raft.ServerID(n.self) {
			return s.Suffrage == raft.Voter
		}
	}
	return false
}

// lastEntry returns the position of the last entry in this replica's log
// or, when its log has been compacted past it, its last snapshot: the
// position Raft compares in its votes.
func (n *Node) lastEntry() failover.LogPosition {
	log, snap := n.LogPositions()
	if log.Index >= snap.Index {
		return log
	}
	return snap
}

// LogPositions returns the positions of the last entry in this replica's
// log and of its last snapshot, as Raft reports them (zero where there is
// none). It may be called once Start has been.
func (n *Node) LogPositions() (log, snap failover.LogPosition) {
	s := n.raft.Stats()
	log = failover.LogPosition{Term: statUint(s, "last_log_term"), Index: statUint(s, "last_log_index")}
	snap = failover.LogPosition{Term: statUint(s, "last_snapshot_term"), Index: statUint(s, "last_snapshot_index")}
	return log, snap
}

// statUint returns the number raft.Stats gives under key; 0 when it gives
// none.
func statUint(stats map[string]string, key string) uint64 {
	var n uint64
	_, _ = fmt.Sscan(stats[key], &n)
	return n
}

// refuseWhileRebuilding answers, with a refusal, an RPC a replica being
// rebuilt must not act on, and says whether it did.
func refuseWhileRebuilding(rpc raft.RPC) bool {
	switch req := rpc.Command.(type) {
	case *raft.RequestVoteRequest:
		rpc.Respond(&raft.RequestVoteResponse{RPCHeader: req.RPCHeader, Term: req.Term}, nil)
	case *raft.RequestPreVoteRequest:
		rpc.Respond(&raft.RequestPreVoteResponse{RPCHeader: req.RPCHeader, Term: req.Term}, nil)
	case *raft.TimeoutNowRequest:
		rpc.Respond(nil, errRebuilding)
	default:
		return false
	}
	return true
}

// lastLeaderRequest returns when the guard last passed a leader's request
// (AppendEntries, InstallSnapshot) on to Raft; zero if never.
func (t *Guard) lastLeaderRequest() time.Time {
	if at := t.leaderSent.Load(); at != 0 {
		return t.epoch.Add(time.Duration(at))
	}
	return time.Time{}
}
