package wire

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBatchArgsRoundTrip(t *testing.T) {
	in := BatchArgs{RingID: 0xdeadbeef, Shard: 7, Session: 1<<63 + 5, Seq: 300, Ops: []Op{
		{Code: OpGet, Key: "a"},
		{Code: OpPut, Key: "b", Value: "value"},
		{Code: OpPut, Key: "empty", Value: ""},
		{Code: OpDelete, Key: "c"},
		{Code: 77, Key: "odd"}, // decodes; rejected later by Check
		{Code: OpPut, Key: strings.Repeat("k", 300), Value: strings.Repeat("v", 70000)},
		{Code: OpPutIf, Cond: CondEqual, Key: "n", Expect: "41", Value: "42"},
		{Code: OpPutIf, Cond: CondEqual, Key: "n", Expect: "", Value: ""},
		{Code: OpPutIf, Cond: CondAbsent, Key: "lock", Value: "owner"},
		{Code: OpPutIf, Cond: CondPresent, Key: "k", Value: strings.Repeat("x", 200)},
		{Code: OpPutIf, Cond: CondAlways, Key: "k", Value: "v"},
		{Code: OpPutIf, Cond: 99, Key: "odd", Expect: "e", Value: "v"}, // decodes; rejected later by Check
		{Code: OpGet, Key: "after"},
	}}
	var out BatchArgs
	require.NoError(t, DecodeBatchArgs(AppendBatchArgs(nil, &in), &out))
	require.Equal(t, in, out)
}

func TestBatchReplyRoundTrip(t *testing.T) {
	in := BatchReply{Status: StatusOK, Leader: "127.0.0.2:8081", Results: []Result{
		{Status: StatusOK, Value: "v"}, {Status: StatusNotFound}, {Status: StatusTooLarge}, {Status: StatusNotLeader},
		{Status: StatusMismatch, Value: "current"}, {Status: StatusMismatchNotFound},
	}}
	var out BatchReply
	require.NoError(t, DecodeBatchReply(AppendBatchReply(nil, &in), &out))
	require.Equal(t, in, out)
	rejected := BatchReply{Status: StatusWrongRing, Err: "ring differs"}
	require.NoError(t, DecodeBatchReply(AppendBatchReply(nil, &rejected), &out))
	require.Equal(t, StatusWrongRing, out.Status)
	require.Equal(t, "ring differs", out.Err)
	require.Empty(t, out.Results)
}

func TestDecodeRejectsMalformed(t *testing.T) {
	good := AppendBatchArgs(nil, &BatchArgs{RingID: 1, Ops: []Op{{Code: OpPut, Key: "k", Value: "v"}}})
	header := good[:8+3] // ring id, then shard, session and seq of one byte each
	cases := map[string][]byte{
		"empty":              {},
		"shard over 32 bits": append(append([]byte{}, good[:8]...), 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0, 0),
		"short ring id":      good[:5],
		"truncated op":       good[:len(good)-1],
		"trailing bytes":     append(append([]byte{}, good...), 0),
		"count past end":     append(append([]byte{}, header...), 100, byte(OpGet), 1, 'k'),
		"overlong varint":    append(append([]byte{}, header...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
		"key length huge":    append(append([]byte{}, header...), 1, byte(OpGet), 0xff, 0xff, 0xff, 0xff, 0x0f),
		"value runs short":   append(append([]byte{}, header...), 1, byte(OpPut), 1, 'k', 5, 'v'),
		"put-if no cond":     append(append([]byte{}, header...), 1, byte(OpPutIf), 1, 'k'),
		"put-if no value":    append(append([]byte{}, header...), 1, byte(OpPutIf), 1, 'k', byte(CondEqual), 1, 'e'),
		"expect runs short":  append(append([]byte{}, header...), 1, byte(OpPutIf), 1, 'k', byte(CondEqual), 9, 'e', 0),
		"expect length huge": append(append([]byte{}, header...), 1, byte(OpPutIf), 1, 'k', byte(CondEqual), 0xff, 0xff, 0xff, 0xff, 0x0f, 0),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			var a BatchArgs
			err := DecodeBatchArgs(b, &a)
			require.ErrorIs(t, err, ErrMalformed)
		})
	}
	t.Run("too many ops", func(t *testing.T) {
		b := append(append([]byte{}, header...), 0x81, 0x80, 0x04) // 65537
		var a BatchArgs
		err := DecodeBatchArgs(b, &a)
		require.ErrorIs(t, err, ErrTooManyOps)
		require.False(t, errors.Is(err, ErrMalformed))
	})
}

// TestPutsDoNotAliasTheBody: a stored put must not pin the request buffer,
// while get keys may.
func TestPutsDoNotAliasTheBody(t *testing.T) {
	body := AppendBatchArgs(nil, &BatchArgs{Ops: []Op{{Code: OpPut, Key: "k", Value: "v"}}})
	var a BatchArgs
	require.NoError(t, DecodeBatchArgs(body, &a))
	for i := range body {
		body[i] = 0
	}
	require.Equal(t, "k", a.Ops[0].Key)
	require.Equal(t, "v", a.Ops[0].Value)
}

// TestAliasingDecodeSharesTheBody: DecodeBatchArgsAliasing decodes what
// DecodeBatchArgs does, without a copy: its keys and values are the body's
// bytes, as its callers (a replica applying a log entry) are told.
func TestAliasingDecodeSharesTheBody(t *testing.T) {
	in := BatchArgs{Session: 4, Seq: 9, Ops: []Op{{Code: OpPut, Key: "k1", Value: "v1"}, {Code: OpGet, Key: "k2"}}}
	body := AppendBatchArgs(nil, &in)
	var a BatchArgs
	require.NoError(t, DecodeBatchArgsAliasing(body, &a))
	require.Equal(t, in, a)
	for i := range body {
		if body[i] == 'k' {
			body[i] = 'K'
		}
	}
	require.Equal(t, "K1", a.Ops[0].Key)
	require.Equal(t, "K2", a.Ops[1].Key)
	var empty BatchArgs
	require.ErrorIs(t, DecodeBatchArgsAliasing(nil, &empty), ErrMalformed)
}

// FuzzDecodeBatchArgs: no input makes the decoder panic or read past its
// input, and whatever decodes re-encodes to an equivalent batch. The seed
// corpus (f.Add and testdata/fuzz) runs in every go test.
func FuzzDecodeBatchArgs(f *testing.F) {
	f.Add(AppendBatchArgs(nil, &BatchArgs{}))
	f.Add(AppendBatchArgs(nil, &BatchArgs{RingID: 9, Ops: []Op{{Code: OpGet, Key: "a"}, {Code: OpPut, Key: "b", Value: "c"}, {Code: OpDelete, Key: "d"}}}))
	f.Add(AppendBatchArgs(nil, &BatchArgs{Ops: []Op{{Code: 200, Key: ""}}}))
	f.Add(AppendBatchArgs(nil, &BatchArgs{Session: 3, Seq: 8, Ops: []Op{
		{Code: OpPutIf, Cond: CondEqual, Key: "n", Expect: "1", Value: "2"},
		{Code: OpPutIf, Cond: CondAbsent, Key: "l", Value: "o"},
		{Code: OpPutIf, Cond: CondAlways, Key: "g", Value: ""},
		{Code: OpPutIf, Cond: 0, Key: "z"},
	}}))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var a, aliasing BatchArgs
		err := DecodeBatchArgs(b, &a)
		aliasErr := DecodeBatchArgsAliasing(b, &aliasing)
		require.Equal(t, err == nil, aliasErr == nil, "the aliasing decoder agrees on what decodes")
		if err != nil {
			return
		}
		require.Equal(t, a, aliasing)
		require.LessOrEqual(t, len(a.Ops), MaxBatchOps)
		var again BatchArgs
		require.NoError(t, DecodeBatchArgs(AppendBatchArgs(nil, &a), &again))
		require.Equal(t, a, again)
	})
}

// FuzzDecodeBatchReply: the client's decoders, copying and aliasing,
// survive any server bytes and agree.
func FuzzDecodeBatchReply(f *testing.F) {
	f.Add(AppendBatchReply(nil, &BatchReply{Results: []Result{{Status: StatusOK, Value: "v"}}}))
	f.Add([]byte{5, 3, 'e', 'r', 'r', 0})
	f.Add(AppendBatchReply(nil, &BatchReply{Results: []Result{{Status: StatusMismatch, Value: "cur"}, {Status: StatusMismatchNotFound}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r, aliasing BatchReply
		err := DecodeBatchReply(b, &r)
		aliasErr := DecodeBatchReplyAliasing(b, &aliasing)
		require.Equal(t, err == nil, aliasErr == nil, "the aliasing decoder agrees on what decodes")
		if err != nil {
			return
		}
		require.Equal(t, r, aliasing)
		var again BatchReply
		require.NoError(t, DecodeBatchReply(AppendBatchReply(nil, &r), &again))
		require.Equal(t, r, again)
	})
}

// TestBatchArgsBound: a batch's encoding fits BatchArgsBound, for gets,
// puts, conditional puts and deletes with keys and values of every length
// class.
func TestBatchArgsBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		ops := make([]Op, rng.IntN(50))
		for i := range ops {
			key := strings.Repeat("k", rng.IntN(300))
			switch rng.IntN(4) {
			case 0:
				ops[i] = Op{Code: OpGet, Key: key}
			case 1:
				ops[i] = Op{Code: OpPut, Key: key, Value: strings.Repeat("v", rng.IntN(20000))}
			case 2:
				ops[i] = Op{Code: OpPutIf, Cond: CondEqual, Key: key,
					Expect: strings.Repeat("e", rng.IntN(20000)), Value: strings.Repeat("v", rng.IntN(20000))}
			default:
				ops[i] = Op{Code: OpDelete, Key: key}
			}
		}
		args := &BatchArgs{RingID: math.MaxUint64, Shard: math.MaxInt32, Session: math.MaxUint64, Seq: math.MaxUint64, Ops: ops}
		require.LessOrEqual(t, len(AppendBatchArgs(nil, args)), BatchArgsBound(ops))
	}
}
