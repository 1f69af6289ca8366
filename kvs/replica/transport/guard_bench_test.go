package transport

import (
	"bufio"
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
)

// appendEntriesBytes is an AppendEntries request of n entries of size
// bytes each, with its type byte, as a leader sends it.
func appendEntriesBytes(b *testing.B, n, size int) []byte {
	var entries []*raft.Log
	for i := range n {
		entries = append(entries, &raft.Log{Index: uint64(i + 1), Term: 2, Data: make([]byte, size), AppendedAt: time.Now()})
	}
	var buf bytes.Buffer
	buf.WriteByte(0)
	req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte("leader"), Addr: []byte("127.0.0.1:8080")}, Term: 2, Entries: entries}
	if err := codec.NewEncoder(&buf, raftHandle()).Encode(req); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkGuard: the scanner against go-msgpack's decode of the same
// request, which hashicorp/raft does anyway: entries of 200 bytes (a
// small write) and 32 KiB (a batch's part for one shard).
func BenchmarkGuard(b *testing.B) {
	for _, size := range []int{200, 32 << 10} {
		msg := appendEntriesBytes(b, 64, size)
		b.Run("scan/"+strconv.Itoa(size)+"B", func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				s := newScanner(DefaultLimits, true)
				for off := 0; off < len(msg); off += 4096 {
					if _, err := s.scan(msg[off:min(off+4096, len(msg))]); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run("decode/"+strconv.Itoa(size)+"B", func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				var req raft.AppendEntriesRequest
				if err := codec.NewDecoder(bytes.NewReader(msg[1:]), &codec.MsgpackHandle{}).Decode(&req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeEntrySize: go-msgpack's decode of an AppendEntries of one
// entry, as hashicorp/raft's transport reads it from a connection. It
// grows the entry's buffer 256 KiB at a time and copies at each step, so
// its rate falls with the entry's size (wire.MaxEntryBytes keeps entries
// within 1 MiB). Run with -benchtime 5x: a 45 MiB entry takes about a
// second.
func BenchmarkDecodeEntrySize(b *testing.B) {
	for _, size := range []int{256 << 10, 1 << 20, 4 << 20, 16 << 20, 45 << 20} {
		msg := appendEntriesBytes(b, 1, size)
		b.Run(strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				var req raft.AppendEntriesRequest
				if err := codec.NewDecoder(bufio.NewReader(bytes.NewReader(msg[1:])), &codec.MsgpackHandle{}).Decode(&req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
