package transport

import (
	"github.com/hashicorp/raft"
)

// MaxAppendBytes bounds the entries' data in one AppendEntries RPC a
// leader sends (one entry larger than it goes alone). hashicorp/raft
// bounds an RPC by its count of entries only (MaxAppendEntries), and a
// follower decodes an RPC whole and stores its entries in one write: at
// 1 MiB an entry (wire.MaxEntryBytes) an RPC could hold 256 MiB, and
// raft-wal keeps a write buffer as large as the largest write its tail
// segment took.
const MaxAppendBytes = 8 << 20

// Network is hashicorp/raft's network transport, whose AppendEntries
// RPCs carry at most MaxAppendBytes of entries each: a larger request is
// cut short in place, as Raft cuts one at MaxAppendEntries, and Raft,
// which reads the request's entries after the call to know what was
// sent, sends the rest next: at once when not pipelining, and with the
// next entry stored or after its CommitTimeout (50 ms) when pipelining.
// Sending the rest at once as more pipelined RPCs would let one call
// fill the pipeline: Raft notices a refusal (a follower's full disk, a
// newer term) only between its calls, and a pipeline whose answers
// nobody reads any more blocks its sender for good.
type Network struct{ *raft.NetworkTransport }

// AppendEntries implements raft.Transport.
func (n *Network) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	cutAppend(args)
	return n.NetworkTransport.AppendEntries(id, target, args, resp)
}

// AppendEntriesPipeline implements raft.Transport.
func (n *Network) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := n.NetworkTransport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	return cutPipeline{p}, nil
}

// cutPipeline cuts each pipelined AppendEntries as Network cuts one.
type cutPipeline struct{ raft.AppendPipeline }

// AppendEntries implements raft.AppendPipeline.
func (p cutPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	cutAppend(args)
	return p.AppendPipeline.AppendEntries(args, resp)
}

// cutAppend cuts req's entries after as many as fit MaxAppendBytes (at
// least one). A request cut short tells the follower the leader's commit
// index only up to its own last entry: a follower commits up to the
// commit index or its own last entry, and its log past the entries sent
// may still hold entries of an old term.
func cutAppend(req *raft.AppendEntriesRequest) {
	size := 0
	for i, e := range req.Entries {
		size += len(e.Data) + len(e.Extensions)
		if size > MaxAppendBytes && i > 0 {
			req.Entries = req.Entries[:i]
			req.LeaderCommitIndex = min(req.LeaderCommitIndex, req.Entries[i-1].Index)
			return
		}
	}
}
