package wire

// Benchmarks of the codec against gob, which net/rpc uses by default, on
// 8192-op YCSB-B-like batches (6-digit keys, 128-byte values, 95% gets):
// one iteration encodes and decodes one batch. gob runs as net/rpc runs it,
// one Encoder and one Decoder per connection, so type information is sent
// once and not per message.
//
//	go test -run XXX -bench Codec -cpu 1 -count 10 ./wire/

import (
	"bytes"
	"encoding/gob"
	"strconv"
	"strings"
	"testing"
)

const benchOps = 8192

func benchArgs() *BatchArgs {
	value := strings.Repeat("v", 128)
	a := &BatchArgs{RingID: 42, Ops: make([]Op, benchOps)}
	for i := range a.Ops {
		key := strconv.Itoa(i * 97 % 1000000)
		a.Ops[i] = Op{Code: OpGet, Key: key}
		if i%20 == 0 {
			a.Ops[i] = Op{Code: OpPut, Key: key, Value: value}
		}
	}
	return a
}

func benchReply() *BatchReply {
	value := strings.Repeat("v", 128)
	r := &BatchReply{Results: make([]Result, benchOps)}
	for i := range r.Results {
		r.Results[i] = Result{Value: value}
		if i%20 == 0 {
			r.Results[i] = Result{}
		}
	}
	return r
}

func perOp(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchOps), "ns/kvop")
}

// benchCodecs runs the binary codec (appendTo, then decode) and gob on v.
func benchCodecs[T any](b *testing.B, v *T, appendTo func([]byte, *T) []byte, decode func([]byte, *T) error) {
	b.Run("binary", func(b *testing.B) {
		var buf []byte
		var got T
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			buf = appendTo(buf[:0], v)
			if err := decode(buf, &got); err != nil {
				b.Fatal(err)
			}
		}
		perOp(b)
	})
	b.Run("gob", func(b *testing.B) {
		var stream bytes.Buffer
		enc, dec := gob.NewEncoder(&stream), gob.NewDecoder(&stream)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			var got T
			if err := enc.Encode(v); err != nil {
				b.Fatal(err)
			}
			if err := dec.Decode(&got); err != nil {
				b.Fatal(err)
			}
		}
		perOp(b)
	})
}

func BenchmarkCodecArgs(b *testing.B) {
	benchCodecs(b, benchArgs(), AppendBatchArgs, DecodeBatchArgs)
}

func BenchmarkCodecReply(b *testing.B) {
	benchCodecs(b, benchReply(), AppendBatchReply, DecodeBatchReply)
}
