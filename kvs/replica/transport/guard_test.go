package transport

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// serveStream accepts Raft connections for s on a loopback port and hands
// them to s, as a server's accept loop does; it returns the port's
// address.
func serveStream(t *testing.T, s *Stream) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			hdr := make([]byte, len(Preamble))
			if _, err := io.ReadFull(c, hdr); err != nil || string(hdr) != Preamble {
				_ = c.Close()
				continue
			}
			if _, err := ReadShard(c); err != nil || !s.Offer(c) {
				_ = c.Close()
			}
		}
	}()
	return ln.Addr().String()
}

// transportPair returns a sender's transport and a receiver's, each over
// a Stream (so guarded), and the receiver's address.
func transportPair(t *testing.T) (from, to *raft.NetworkTransport, addr string) {
	recvStream := NewStream(0, "receiver", DialTCP)
	addr = serveStream(t, recvStream)
	to = raft.NewNetworkTransport(recvStream, 2, 5*time.Second, io.Discard)
	from = raft.NewNetworkTransport(NewStream(0, "sender", DialTCP), 2, 5*time.Second, io.Discard)
	t.Cleanup(func() { _ = from.Close(); _ = to.Close() })
	return from, to, addr
}

// TestGuardPassesRaftsOwnRPCs: every RPC hashicorp/raft sends, with a full
// AppendEntries of entries up to 1 MiB and a snapshot of 3 MiB, passes the
// guards of both sides unchanged, and so do the answers.
func TestGuardPassesRaftsOwnRPCs(t *testing.T) {
	from, to, addr := transportPair(t)
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("sender"), Addr: []byte("sender")}
	var entries []*raft.Log
	for i := range MaxAppendEntries {
		data := bytes.Repeat([]byte{byte(i)}, (i*4099)%(1<<20)+1)
		entries = append(entries, &raft.Log{Index: uint64(i + 1), Term: 3, Type: raft.LogCommand, Data: data,
			Extensions: []byte("ext"), AppendedAt: time.Now()})
	}
	snapshot := bytes.Repeat([]byte("snapshot"), 3<<20/8)
	go func() {
		for rpc := range to.Consumer() {
			switch req := rpc.Command.(type) {
			case *raft.AppendEntriesRequest:
				ok := len(req.Entries) == len(entries)
				for i, e := range req.Entries {
					ok = ok && bytes.Equal(e.Data, entries[i].Data) && e.AppendedAt.Equal(entries[i].AppendedAt)
				}
				rpc.Respond(&raft.AppendEntriesResponse{RPCHeader: hdr, Term: 3, LastLog: 99, Success: ok}, nil)
			case *raft.RequestVoteRequest:
				rpc.Respond(&raft.RequestVoteResponse{RPCHeader: hdr, Term: req.Term, Granted: true}, nil)
			case *raft.RequestPreVoteRequest:
				rpc.Respond(&raft.RequestPreVoteResponse{RPCHeader: hdr, Term: req.Term, Granted: true}, nil)
			case *raft.TimeoutNowRequest:
				rpc.Respond(&raft.TimeoutNowResponse{RPCHeader: hdr}, errors.New("an error, answered"))
			case *raft.InstallSnapshotRequest:
				got, err := io.ReadAll(rpc.Reader)
				rpc.Respond(&raft.InstallSnapshotResponse{RPCHeader: hdr, Term: 3,
					Success: err == nil && bytes.Equal(got, snapshot) && req.Size == int64(len(snapshot))}, nil)
			}
		}
	}()
	id, target := raft.ServerID("receiver"), raft.ServerAddress(addr)

	var ae raft.AppendEntriesResponse
	require.NoError(t, from.AppendEntries(id, target, &raft.AppendEntriesRequest{RPCHeader: hdr, Term: 3,
		PrevLogEntry: 0, PrevLogTerm: 0, Entries: entries, LeaderCommitIndex: 7}, &ae))
	require.True(t, ae.Success, "the entries arrived changed")
	require.Equal(t, uint64(99), ae.LastLog)
	require.NoError(t, from.AppendEntries(id, target, &raft.AppendEntriesRequest{RPCHeader: hdr, Term: 3}, &ae), "a heartbeat")

	var rv raft.RequestVoteResponse
	require.NoError(t, from.RequestVote(id, target, &raft.RequestVoteRequest{RPCHeader: hdr, Term: 4, LastLogIndex: 9}, &rv))
	require.True(t, rv.Granted)
	var pv raft.RequestPreVoteResponse
	require.NoError(t, from.RequestPreVote(id, target, &raft.RequestPreVoteRequest{RPCHeader: hdr, Term: 5}, &pv))
	require.True(t, pv.Granted)
	var tn raft.TimeoutNowResponse
	require.ErrorContains(t, from.TimeoutNow(id, target, &raft.TimeoutNowRequest{RPCHeader: hdr}, &tn), "an error, answered")

	var is raft.InstallSnapshotResponse
	require.NoError(t, from.InstallSnapshot(id, target, &raft.InstallSnapshotRequest{RPCHeader: hdr, SnapshotVersion: raft.SnapshotVersionMax,
		Term: 3, LastLogIndex: 10, LastLogTerm: 3, Configuration: []byte("configuration"), ConfigurationIndex: 2,
		Size: int64(len(snapshot))}, &is, bytes.NewReader(snapshot)))
	require.True(t, is.Success, "the snapshot arrived changed")

	// Pipelined AppendEntries, as a leader replicates.
	p, err := from.AppendEntriesPipeline(id, target)
	require.NoError(t, err)
	done := make(chan error, 20)
	go func() {
		for range 20 {
			f := <-p.Consumer()
			done <- f.Error()
		}
	}()
	for i := range 20 {
		_, err := p.AppendEntries(&raft.AppendEntriesRequest{RPCHeader: hdr, Term: 3, Entries: entries[:i*10]}, &raft.AppendEntriesResponse{})
		require.NoError(t, err)
	}
	for range 20 {
		require.NoError(t, <-done)
	}
	require.NoError(t, p.Close())
}

// raftHandle is the msgpack handle hashicorp/raft encodes with (times in
// their binary form, by default).
func raftHandle() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.TimeNotBuiltin = true
	return h
}

// msgpackOf encodes v as hashicorp/raft does.
func msgpackOf(t *testing.T, v any) []byte {
	var b bytes.Buffer
	require.NoError(t, codec.NewEncoder(&b, raftHandle()).Encode(v))
	return b.Bytes()
}

// scanAll feeds in to a scanner of requests in pieces of size piece.
func scanAll(in []byte, piece int, lim Limits) (passed int, err error) {
	s := newScanner(lim, true)
	for len(in) > 0 {
		n := min(piece, len(in))
		m, err := s.scan(in[:n])
		passed += m
		if err != nil || m < n {
			return passed, err
		}
		in = in[n:]
	}
	return passed, nil
}

// str is a msgpack str32 header claiming n bytes.
func str(n uint32) []byte { return []byte{0xdb, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)} }

func fixstr(s string) []byte { return append([]byte{0xa0 | byte(len(s))}, s...) }

func str8(s string) []byte { return append([]byte{0xd9, byte(len(s))}, s...) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// bigMessage is a request of maps maps of four 100-byte entries' data
// each: about 430 bytes a map.
func bigMessage(maps int) []byte {
	d := cat(fixstr("Data"), str(100), make([]byte, 100))
	m := cat([]byte{0x84}, d, d, d, d)
	b := []byte{0x00, 0x80 | byte(maps)}
	for i := range maps {
		b = append(append(b, fixstr(string(rune('a'+i)))...), m...)
	}
	return b
}

// TestGuardRefuses: each message breaks one rule and is refused, read
// whole or a byte at a time; the same message within the rule passes.
func TestGuardRefuses(t *testing.T) {
	lim := Limits{MaxItems: 4, MaxBytes: 100, MaxField: 50, MaxDepth: 3, MaxMessage: 1000}
	appendedAt := func(v []byte) []byte {
		return cat([]byte{0x00, 0x81}, fixstr("Entries"), []byte{0x91, 0x81}, fixstr("AppendedAt"), v)
	}
	cases := []struct {
		name      string
		bad, good []byte
	}{
		{"an unknown RPC type", []byte{0x05, 0x80}, []byte{0x04, 0x80}},
		{"a request that is not a map", []byte{0x00, 0x90}, []byte{0x00, 0x80}},
		{"an entry's data over MaxBytes", cat([]byte{0x00, 0x81}, fixstr("Data"), str(101)), cat([]byte{0x00, 0x81}, fixstr("Data"), str(100), make([]byte, 100))},
		{"another value over MaxField", cat([]byte{0x00, 0x81}, fixstr("Datum"), str(51)), cat([]byte{0x00, 0x81}, fixstr("Datum"), str(50), make([]byte, 50))},
		{"a key over 32 bytes", cat([]byte{0x00, 0x81}, str8(strings.Repeat("k", 33)), []byte{0x01}), cat([]byte{0x00, 0x81}, str8(strings.Repeat("k", 32)), []byte{0x01})},
		{"an empty key", cat([]byte{0x00, 0x81}, fixstr(""), []byte{0x01}), nil},
		{"a key that is not ASCII", cat([]byte{0x00, 0x81}, fixstr("Addr\xff\x00"), []byte{0x01}), nil},
		{"a message over MaxMessage", bigMessage(3), bigMessage(2)},
		{"an array over MaxItems", cat([]byte{0x00, 0x81}, fixstr("Entries"), []byte{0x95}), cat([]byte{0x00, 0x81}, fixstr("Entries"), []byte{0x94, 0x80, 0x80, 0x80, 0xc0})},
		{"a map over MaxItems (map32)", []byte{0x00, 0xdf, 0, 0, 0, 5}, []byte{0x00, 0xdf, 0, 0, 0, 0}},
		{"nesting over MaxDepth", cat([]byte{0x00, 0x81}, fixstr("a"), []byte{0x81}, fixstr("b"), []byte{0x91, 0x81}), cat([]byte{0x00, 0x81}, fixstr("a"), []byte{0x81}, fixstr("b"), []byte{0x91, 0xc0})},
		{"an array element that is not a map", cat([]byte{0x00, 0x81}, fixstr("Entries"), []byte{0x91, 0x90}), nil},
		{"a map key that is not a string", []byte{0x00, 0x81, 0x93, 0x01, 0x02, 0x03, 0xc0}, nil},
		{"a time that claims more than a time", appendedAt(str(33)), appendedAt(cat(str(15), make([]byte, 15)))},
		{"a time that is a map", appendedAt([]byte{0x80}), appendedAt([]byte{0xc0})},
		{"a msgpack timestamp of 64 bytes", cat([]byte{0x00, 0x81}, fixstr("x"), []byte{0xc7, 64, 0xff}), cat([]byte{0x00, 0x81}, fixstr("x"), []byte{0xc7, 12, 0xff}, make([]byte, 12))},
		{"a snapshot size that is a string", cat([]byte{0x02, 0x81}, fixstr("Size"), fixstr("7")), nil},
		{"a byte msgpack never uses", []byte{0x00, 0x81, 0xa1, 'a', 0xc1}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, piece := range []int{1 << 20, 1, 3} {
				_, err := scanAll(c.bad, piece, lim)
				require.ErrorIs(t, err, ErrRefused, "in pieces of %d", piece)
				if c.good != nil {
					n, err := scanAll(c.good, piece, lim)
					require.NoError(t, err, "in pieces of %d", piece)
					require.Equal(t, len(c.good), n)
				}
			}
		})
	}
}

// TestGuardEndsAfterASnapshot: the data of an InstallSnapshot request is
// as long as go-msgpack decodes its Size (the last of duplicate keys, nil
// as zero, a uint64 past int64 as negative), and nothing after it passes:
// a leader closes the connection after a snapshot, and bytes Raft did not
// read as data must not be read as an unchecked request.
func TestGuardEndsAfterASnapshot(t *testing.T) {
	sizeKey := fixstr("Size")
	cases := []struct {
		name string
		size []byte // the request's Size entries, each key and value
		want int64
	}{
		{"fixint", cat(sizeKey, []byte{0x05}), 5},
		{"uint16", cat(sizeKey, []byte{0xcd, 0x01, 0x00}), 256},
		{"last of two", cat(sizeKey, []byte{0x09}, sizeKey, []byte{0x03}), 3},
		{"nil after a size", cat(sizeKey, []byte{0x09}, sizeKey, []byte{0xc0}), 0},
		{"negative", cat(sizeKey, []byte{0xd0, 0xfe}), 0},
		{"uint64 past int64", cat(sizeKey, []byte{0xcf, 0xff, 0, 0, 0, 0, 0, 0, 0}), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pairs := byte(bytes.Count(c.size, sizeKey))
			req := cat([]byte{0x02, 0x80 | (pairs + 1)}, fixstr("Term"), []byte{0x03}, c.size)
			in := cat(req, bytes.Repeat([]byte{0x00}, 300))
			passed, err := scanAll(in, 7, DefaultLimits)
			require.NoError(t, err)
			require.Equal(t, len(req)+int(c.want), passed)

			var decoded raft.InstallSnapshotRequest
			require.NoError(t, codec.NewDecoder(bytes.NewReader(req[1:]), &codec.MsgpackHandle{}).Decode(&decoded))
			require.Equal(t, c.want, max(decoded.Size, 0), "the scanner reads Size as go-msgpack does")
		})
	}
	// A Size under a key other than the request's own is not its size.
	req := cat([]byte{0x02, 0x81}, fixstr("Configuration"), []byte{0x81}, fixstr("Size"), []byte{0x09})
	passed, err := scanAll(cat(req, make([]byte, 50)), 1<<20, DefaultLimits)
	require.NoError(t, err)
	require.Equal(t, len(req), passed)
}

// TestGuardAgreesWithTheDecoder: where a message ends, for the scanner,
// is where go-msgpack stops decoding it, for each of hashicorp/raft's
// requests; a scanner that is off by a byte would let the next message
// through unchecked.
func TestGuardAgreesWithTheDecoder(t *testing.T) {
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("a"), Addr: []byte("b")}
	reqs := []struct {
		typ byte
		v   any
		out any
	}{
		{0, &raft.AppendEntriesRequest{RPCHeader: hdr, Term: 1 << 40, Entries: []*raft.Log{{Index: 1, Data: make([]byte, 70000), AppendedAt: time.Now()},
			{Index: 2, Type: raft.LogConfiguration, Data: []byte(strings.Repeat("c", 300))}}, LeaderCommitIndex: 1}, &raft.AppendEntriesRequest{}},
		{1, &raft.RequestVoteRequest{RPCHeader: hdr, Term: 2, LastLogIndex: 1 << 33, LeadershipTransfer: true}, &raft.RequestVoteRequest{}},
		{3, &raft.TimeoutNowRequest{RPCHeader: hdr}, &raft.TimeoutNowRequest{}},
		{4, &raft.RequestPreVoteRequest{RPCHeader: hdr, Term: 1<<63 - 1}, &raft.RequestPreVoteRequest{}},
	}
	var stream []byte
	var ends []int
	for _, r := range reqs {
		stream = append(stream, r.typ)
		stream = append(stream, msgpackOf(t, r.v)...)
		ends = append(ends, len(stream))
	}
	s := newScanner(DefaultLimits, true)
	start := 0
	for i, end := range ends {
		for j := start; j < end; j++ {
			_, err := s.scan(stream[j : j+1])
			require.NoError(t, err)
			require.Equal(t, j == end-1, s.state == stType, "request %d: the scanner's end at byte %d of %d", i, j-start, end-start)
		}
		// From a reader, as hashicorp/raft decodes: from bytes,
		// go-msgpack skips some values differently.
		r := bytes.NewReader(stream[start+1:])
		require.NoError(t, codec.NewDecoder(r, &codec.MsgpackHandle{}).Decode(reqs[i].out))
		require.Equal(t, end-start-1, len(stream)-start-1-r.Len(), "request %d", i)
		start = end
	}
}

// TestGuardChecksAnswers: on a dialled connection each value is an answer
// (an error string, then a response), held to the same limits.
func TestGuardChecksAnswers(t *testing.T) {
	lim := DefaultLimits
	errString := cat([]byte{0xda, 0x00, 0x05}, []byte("error"))
	resp := cat([]byte{0x82}, fixstr("Term"), []byte{0x03}, fixstr("Success"), []byte{0xc3})
	s := newScanner(lim, false)
	for range 3 {
		n, err := s.scan(cat(errString, resp))
		require.NoError(t, err)
		require.Equal(t, len(errString)+len(resp), n)
	}
	s = newScanner(lim, false)
	_, err := s.scan(cat(resp, str(uint32(lim.MaxField+1))))
	require.ErrorIs(t, err, ErrRefused, "an error string over MaxField")
	s = newScanner(lim, false)
	_, err = s.scan(cat([]byte{0x81}, fixstr("AppendedAt"), str(40)))
	require.ErrorIs(t, err, ErrRefused, "a time of 40 bytes in an answer")
}
