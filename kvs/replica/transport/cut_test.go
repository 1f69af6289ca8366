package transport

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// TestAppendEntriesCutToMaxAppendBytes: 20 entries of 1 MiB reach the
// follower in RPCs of at most MaxAppendBytes that follow on from each
// other (each one's previous entry is the last one's last), in order,
// with every entry's data, sent as Raft sends the rest of a request cut
// short: a request from the next entry on, synchronous or pipelined. A
// request cut short names only the entries sent, and a commit index no
// higher than its last. Raft's own transport, the planted bug, sends one
// RPC of 20 MiB, which the check refuses.
func TestAppendEntriesCutToMaxAppendBytes(t *testing.T) {
	var entries []*raft.Log
	for i := range 20 {
		entries = append(entries, &raft.Log{Index: uint64(101 + i), Term: 7, Type: raft.LogCommand,
			Data: bytes.Repeat([]byte{byte(i)}, 1<<20)})
	}
	// request asks for the entries from index next on, as Raft's
	// setupAppendEntries does, with the commit index of a leader whose last entry is 120.
	request := func(next uint64) *raft.AppendEntriesRequest {
		req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("s"), Addr: []byte("s")},
			Term: 7, PrevLogEntry: 100, PrevLogTerm: 6, LeaderCommitIndex: 115}
		if next > 101 {
			req.PrevLogEntry, req.PrevLogTerm = next-1, 7
		}
		req.Entries = append(req.Entries, entries[next-101:]...)
		return req
	}

	// Synchronous, as replicateTo sends: each call sends what fits and
	// says so in its request; the next starts after it.
	from, got := cutPair(t, true)
	var calls []int
	for next := uint64(101); next <= 120; {
		req, resp := request(next), new(raft.AppendEntriesResponse)
		require.NoError(t, from.AppendEntries("r", "r", req, resp))
		require.True(t, resp.Success)
		last := req.Entries[len(req.Entries)-1].Index
		require.LessOrEqual(t, req.LeaderCommitIndex, last, "a request cut short told a commit index past its entries")
		calls, next = append(calls, len(req.Entries)), last+1
	}
	require.Equal(t, []int{8, 8, 4}, calls)
	require.NoError(t, cutError(<-got, entries))

	// Pipelined, as pipelineSend sends: the same cuts, each answered on
	// the pipeline's channel.
	from, got = cutPair(t, true)
	p, err := from.AppendEntriesPipeline("r", "r")
	require.NoError(t, err)
	defer func() { _ = p.Close() }()
	answered := make(chan int)
	go func() { // as Raft's pipelineDecode reads the answers
		n := 0
		for {
			select {
			case f := <-p.Consumer():
				if f.Response().Success {
					n++
				}
			case <-time.After(time.Second):
				answered <- n
				return
			}
		}
	}()
	for next := uint64(101); next <= 120; {
		req := request(next)
		_, err = p.AppendEntries(req, new(raft.AppendEntriesResponse))
		require.NoError(t, err)
		next = req.Entries[len(req.Entries)-1].Index + 1
	}
	require.Equal(t, 3, <-answered, "each RPC answered on the pipeline's channel")
	require.NoError(t, cutError(<-got, entries))

	// Planted: Raft's own transport sends 20 MiB in one RPC.
	from, got = cutPair(t, false)
	require.NoError(t, from.AppendEntries("r", "r", request(101), new(raft.AppendEntriesResponse)))
	require.Error(t, cutError(<-got, entries), "the check took an RPC of 20 MiB")
}

// cutPair returns a sender's transport (Network, or raft's own when not
// cut) and a channel on which, when the sender closes, the receiver
// gives every AppendEntries it answered, in order.
func cutPair(t *testing.T, cut bool) (raft.Transport, <-chan []*raft.AppendEntriesRequest) {
	recv := NewStream(0, "receiver", DialTCP)
	addr := serveStream(t, recv)
	to := raft.NewNetworkTransport(recv, 2, 5*time.Second, io.Discard)
	raw := raft.NewNetworkTransport(NewStream(0, "sender", DialTCP), 2, 5*time.Second, io.Discard)
	var from raft.Transport = raw
	if cut {
		from = &Network{raw}
	}
	from = addrTransport{from, raft.ServerAddress(addr)}
	got := make(chan []*raft.AppendEntriesRequest, 1)
	go func() {
		var reqs []*raft.AppendEntriesRequest
		timeout := time.After(2 * time.Second)
		for {
			select {
			case rpc := <-to.Consumer():
				req := rpc.Command.(*raft.AppendEntriesRequest)
				reqs = append(reqs, req)
				rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, LastLog: req.PrevLogEntry + uint64(len(req.Entries)), Success: true}, nil)
			case <-timeout:
				got <- reqs
				return
			}
		}
	}()
	t.Cleanup(func() { _ = raw.Close(); _ = to.Close() })
	return from, got
}

// addrTransport sends every RPC to one address, whatever target says.
type addrTransport struct {
	raft.Transport
	addr raft.ServerAddress
}

func (a addrTransport) AppendEntries(id raft.ServerID, _ raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	return a.Transport.AppendEntries(id, a.addr, args, resp)
}

func (a addrTransport) AppendEntriesPipeline(id raft.ServerID, _ raft.ServerAddress) (raft.AppendPipeline, error) {
	return a.Transport.AppendEntriesPipeline(id, a.addr)
}

// cutError says how reqs fail to carry want, in order, in RPCs of at
// most MaxAppendBytes each, the first following entry 100 of term 6, and
// each later one following the last entry of the one before it.
func cutError(reqs []*raft.AppendEntriesRequest, want []*raft.Log) error {
	prevIndex, prevTerm := uint64(100), uint64(6)
	var all []*raft.Log
	for _, req := range reqs {
		size := 0
		for _, e := range req.Entries {
			size += len(e.Data)
		}
		if size > MaxAppendBytes && len(req.Entries) > 1 {
			return fmt.Errorf("an RPC carried %d entries, %d bytes", len(req.Entries), size)
		}
		if req.PrevLogEntry != prevIndex || req.PrevLogTerm != prevTerm || req.Term != 7 {
			return fmt.Errorf("an RPC follows entry %d of term %d (term %d); want entry %d of term %d",
				req.PrevLogEntry, req.PrevLogTerm, req.Term, prevIndex, prevTerm)
		}
		if n := len(req.Entries); n > 0 {
			prevIndex, prevTerm = req.Entries[n-1].Index, req.Entries[n-1].Term
		}
		all = append(all, req.Entries...)
	}
	if len(all) != len(want) {
		return fmt.Errorf("%d entries arrived, want %d", len(all), len(want))
	}
	for i := range want {
		if all[i].Index != want[i].Index || !bytes.Equal(all[i].Data, want[i].Data) {
			return fmt.Errorf("entry %d arrived as entry %d or with other data", want[i].Index, all[i].Index)
		}
	}
	return nil
}
