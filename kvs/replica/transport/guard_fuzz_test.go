package transport

import (
	"bufio"
	"bytes"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
)

// FuzzGuardAgreesWithTheDecoder: whenever go-msgpack decodes an
// AppendEntries or InstallSnapshot request from bytes the scanner passed,
// the scanner saw the request end exactly where the decoder stopped, and
// takes a snapshot's data to be as long as the decoded Size says. Were it to see the
// end later, Raft would read the next request from bytes the scanner took
// for this one's, unchecked. `go test -fuzz FuzzGuard ./kvs/replica/transport`
// searches; plain `go test` runs the seeds.
func FuzzGuardAgreesWithTheDecoder(f *testing.F) {
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("a"), Addr: []byte("b")}
	seeds := []any{
		&raft.AppendEntriesRequest{RPCHeader: hdr, Term: 3, Entries: []*raft.Log{{Index: 1, Data: []byte("data"), AppendedAt: time.Unix(5, 6)}, nil}},
		&raft.AppendEntriesRequest{RPCHeader: hdr, Term: 1 << 40, LeaderCommitIndex: 1 << 20},
		map[string]any{"Entries": []any{map[string]any{"AppendedAt": time.Unix(1, 2), "X": []any{1.5, nil, true}}}},
		&raft.AppendEntriesRequest{RPCHeader: hdr, Term: 4, Entries: make([]*raft.Log, 17)}, // array16
		wideMap(17), // map16
		&raft.InstallSnapshotRequest{RPCHeader: hdr, Term: 2, Configuration: []byte("c"), Size: 1 << 20},
		map[string]any{"Size": -3, "Term": 1, "Sizes": 4},
	}
	for i, s := range seeds {
		b, err := codecBytes(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(i >= 5, b)
	}
	f.Fuzz(func(t *testing.T, snapshot bool, msg []byte) {
		s := newScanner(DefaultLimits, true)
		typ := byte(0)
		if snapshot {
			typ = rpcInstallSnapshot
		}
		if _, err := s.scan([]byte{typ}); err != nil {
			t.Fatal(err)
		}
		end := -1
		for i := range msg {
			if _, err := s.scan(msg[i : i+1]); err != nil {
				return // refused: Raft never sees the rest
			}
			if s.state != stToken && s.state != stHeader && s.state != stPayload {
				end = i + 1
				break
			}
		}
		var ae raft.AppendEntriesRequest
		var is raft.InstallSnapshotRequest
		var req any = &ae
		if snapshot {
			req = &is
		}
		// Decoded from a reader, as hashicorp/raft decodes (from bytes,
		// go-msgpack skips some values differently).
		r := bytes.NewReader(msg)
		if err := codec.NewDecoder(r, &codec.MsgpackHandle{}).Decode(req); err != nil {
			return
		}
		if read := len(msg) - r.Len(); read != end {
			t.Fatalf("the decoder read %d bytes, the scanner saw the request end at %d", read, end)
		}
		if data := s.skip * int64(btoi(s.state == stData)); snapshot && data != max(is.Size, 0) {
			t.Fatalf("the decoder's Size is %d, the scanner's data %d bytes", is.Size, data)
		}
	})
}

func codecBytes(v any) ([]byte, error) {
	var b []byte
	err := codec.NewEncoderBytes(&b, raftHandle()).Encode(v)
	return b, err
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// FuzzGuardStream: a stream of requests (or of answers) read as
// hashicorp/raft reads it, through one bufio reader and one decoder, each
// request's type byte read from the bufio reader: every message the
// decoder reads ends where the scanner saw it end.
func FuzzGuardStream(f *testing.F) {
	hdr := raft.RPCHeader{ProtocolVersion: 3, ID: []byte("a"), Addr: []byte("b")}
	for _, v := range []any{&raft.RequestVoteRequest{RPCHeader: hdr, Term: 300, LastLogIndex: 1 << 40, LastLogTerm: 70000},
		&raft.AppendEntriesResponse{RPCHeader: hdr, Term: 1, LastLog: 200},
		map[string]any{"Term": 1, "X": []any{nil, map[string]any{"a": 1.5}}}} {
		b, err := codecBytes(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(false, append(append(append([]byte{}, b...), 0x01), b...))
		f.Add(true, append(append([]byte{0xa0}, b...), b...))
	}
	f.Fuzz(func(t *testing.T, answers bool, in []byte) {
		if !answers {
			in = append([]byte{1}, in...)
		}
		s := newScanner(DefaultLimits, !answers)
		var ends []int
		for i := range in {
			if _, err := s.scan(in[i : i+1]); err != nil {
				in = in[:i] // Raft never sees byte i
				break
			}
			if (answers && s.state == stToken && len(s.stack) == 0 && s.msg == 0) || (!answers && s.state == stType) {
				ends = append(ends, i+1)
			}
			if s.state == stData || s.state == stEnd {
				return
			}
		}
		cr := &countingReader{r: bytes.NewReader(in)}
		br := bufio.NewReaderSize(cr, 16)
		dec := codec.NewDecoder(br, &codec.MsgpackHandle{})
		for k := 0; ; k++ {
			var v any
			if answers {
				v = new(string)
				if k%2 == 1 {
					v = &raft.AppendEntriesResponse{}
				}
			} else {
				rt, err := br.ReadByte()
				if err != nil {
					return
				}
				switch rt {
				case 0:
					v = &raft.AppendEntriesRequest{}
				case 1:
					v = &raft.RequestVoteRequest{}
				case 3:
					v = &raft.TimeoutNowRequest{}
				case 4:
					v = &raft.RequestPreVoteRequest{}
				default:
					return
				}
			}
			if err := dec.Decode(v); err != nil {
				return
			}
			if at := cr.n - br.Buffered(); k >= len(ends) || ends[k] != at {
				t.Fatalf("message %d: the decoder ended at %d, the scanner at %v", k, at, ends)
			}
		}
	})
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r *bytes.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// wideMap is a map of n keys, which msgpack writes as a map16 past 15.
func wideMap(n int) map[string]any {
	m := map[string]any{"Term": 1}
	for i := range n - 1 {
		m[string(rune('a'+i))] = i
	}
	return m
}
