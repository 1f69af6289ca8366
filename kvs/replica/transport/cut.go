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
// RPCs carry at most MaxAppendBytes of entries each: a synchronous one is
// cut short (Raft sends the rest next, as it does past
// MaxAppendEntries), and a pipelined one is sent as several RPCs in a
// row, each answered on the pipeline's channel as Raft's would be.
type Network struct{ *raft.NetworkTransport }

// AppendEntries implements raft.Transport.
func (n *Network) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	args.Entries = args.Entries[:appendCut(args.Entries, 0)]
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

// cutPipeline sends a pipelined AppendEntries of more than MaxAppendBytes
// as several RPCs, each following on from the one before (its previous
// entry is the one before's last), so that the follower appends them in
// turn and Raft, reading each answer on Consumer, counts each one's
// entries as replicated once answered.
type cutPipeline struct{ raft.AppendPipeline }

// AppendEntries implements raft.AppendPipeline. The future returned is
// the last RPC's; Raft reads the answers from Consumer.
func (p cutPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	entries := args.Entries
	for from := 0; ; {
		to := appendCut(entries, from)
		if from == 0 && to == len(entries) {
			return p.AppendPipeline.AppendEntries(args, resp)
		}
		part := *args
		part.Entries = entries[from:to]
		if from > 0 {
			prev := entries[from-1]
			part.PrevLogEntry, part.PrevLogTerm = prev.Index, prev.Term
		}
		partResp := resp
		if to < len(entries) {
			partResp = new(raft.AppendEntriesResponse)
		}
		f, err := p.AppendPipeline.AppendEntries(&part, partResp)
		if err != nil || to == len(entries) {
			return f, err
		}
		from = to
	}
}

// appendCut returns where the RPC that starts at entries[from] ends: past
// as many entries as fit MaxAppendBytes, and at least one.
func appendCut(entries []*raft.Log, from int) int {
	size := 0
	for i := from; i < len(entries); i++ {
		size += len(entries[i].Data) + len(entries[i].Extensions)
		if size > MaxAppendBytes && i > from {
			return i
		}
	}
	return len(entries)
}
