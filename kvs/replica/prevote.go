package replica

import (
	"fmt"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/kvs/replica/failover"
)

// The keys under which hashicorp/raft keeps a replica's last vote in its
// stable store (persistVote): the term, and the candidate's address.
var (
	keyLastVoteTerm = []byte("LastVoteTerm")
	keyLastVoteCand = []byte("LastVoteCand")
)

// preVoteGuard is a shard's Raft transport with one rule of its own: it
// answers the pre-votes that failover.RefusePreVote refuses, with a
// refusal, before Raft sees them. Every other RPC goes to Raft unchanged.
type preVoteGuard struct {
	*raft.NetworkTransport
	rpcs chan raft.RPC
	stop chan struct{}
	once sync.Once
}

func newPreVoteGuard(t *raft.NetworkTransport) *preVoteGuard {
	return &preVoteGuard{NetworkTransport: t, rpcs: make(chan raft.RPC), stop: make(chan struct{})}
}

// Consumer returns the RPCs for Raft.
func (t *preVoteGuard) Consumer() <-chan raft.RPC { return t.rpcs }

// start passes the RPCs the peers send on to Raft until the guard closes.
// A pre-vote that refuse answers (its reply and true) is answered there.
func (t *preVoteGuard) start(refuse func(*raft.RequestPreVoteRequest) (*raft.RequestPreVoteResponse, bool)) {
	go func() {
		in := t.NetworkTransport.Consumer()
		for {
			var rpc raft.RPC
			select {
			case rpc = <-in:
			case <-t.stop:
				return
			}
			if req, ok := rpc.Command.(*raft.RequestPreVoteRequest); ok {
				if resp, no := refuse(req); no {
					rpc.Respond(resp, nil)
					continue
				}
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
func (t *preVoteGuard) Close() error {
	t.once.Do(func() { close(t.stop) })
	return t.NetworkTransport.Close()
}

// refusePreVote answers a pre-vote that failover.RefusePreVote refuses:
// one for a term in which this replica has already voted for another
// candidate, or stood itself, from a peer whose log is no more up to date
// than its own.
func (g *Group) refusePreVote(req *raft.RequestPreVoteRequest) (*raft.RequestPreVoteResponse, bool) {
	term, err := g.logs.GetUint64(keyLastVoteTerm)
	if err != nil || term < req.Term {
		return nil, false
	}
	cand, err := g.logs.Get(keyLastVoteCand)
	if err != nil {
		return nil, false
	}
	p := failover.PreVote{From: string(req.Addr), Term: req.Term,
		Log: failover.LogPosition{Term: req.LastLogTerm, Index: req.LastLogIndex}}
	if !failover.RefusePreVote(failover.Vote{Term: term, For: string(cand)}, g.lastEntry(), p) {
		return nil, false
	}
	g.log.Info("refused a pre-vote for a term this replica has voted in", "from", p.From, "term", p.Term,
		"voted_for", string(cand))
	return &raft.RequestPreVoteResponse{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax,
		ID: []byte(g.self), Addr: []byte(g.self)}, Term: g.raft.CurrentTerm()}, true
}

// lastEntry returns the position of the last entry in this replica's log
// or, when its log has been compacted past it, its last snapshot: the
// position Raft compares in its votes.
func (g *Group) lastEntry() failover.LogPosition {
	s := g.raft.Stats()
	var log, snap failover.LogPosition
	_, _ = fmt.Sscan(s["last_log_index"], &log.Index)
	_, _ = fmt.Sscan(s["last_log_term"], &log.Term)
	_, _ = fmt.Sscan(s["last_snapshot_index"], &snap.Index)
	_, _ = fmt.Sscan(s["last_snapshot_term"], &snap.Term)
	if log.Index >= snap.Index {
		return log
	}
	return snap
}
