package transport

import (
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
		&raft.InstallSnapshotRequest{RPCHeader: hdr, Term: 2, Configuration: []byte("c"), Size: 1 << 20},
		map[string]any{"Size": -3, "Term": 1, "Sizes": 4},
	}
	for i, s := range seeds {
		b, err := codecBytes(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(i >= 3, b)
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
