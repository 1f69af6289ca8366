package store_test

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/kvs/store"
)

// TestValuesNeverMove: values added later do not move those added before,
// so the strings handed out stay valid and distinct; the limit refuses a
// value that would pass it, and accepts smaller ones after.
func TestValuesNeverMove(t *testing.T) {
	vs := &store.Values{Limit: 1000, Hint: 8}
	var got []string
	var ptrs []*byte
	for i := range 20 {
		v, ok := vs.Add([]byte(strings.Repeat(string(rune('a'+i)), 10)))
		require.True(t, ok)
		got = append(got, v)
		ptrs = append(ptrs, unsafe.StringData(v))
	}
	for i, v := range got {
		require.Equal(t, strings.Repeat(string(rune('a'+i)), 10), v, "value %d changed", i)
		require.Same(t, ptrs[i], unsafe.StringData(v))
	}
	require.Equal(t, 200, vs.Len())
	require.GreaterOrEqual(t, vs.Allocated(), vs.Len())
	_, ok := vs.Add(make([]byte, 801))
	require.False(t, ok, "over the limit")
	_, ok = vs.Add(make([]byte, 800))
	require.True(t, ok, "exactly the limit")
	require.Equal(t, 1000, vs.Len())

	var zero store.Values
	_, ok = zero.Add([]byte("x"))
	require.False(t, ok, "the zero value accepts nothing")
	_, ok = zero.Add(nil)
	require.True(t, ok, "an empty value fits any limit")
}

// TestValuesAllocatedCountsTheChunk: one small value in a chunk sized for
// many large ones keeps the whole chunk alive, and Allocated says so.
func TestValuesAllocatedCountsTheChunk(t *testing.T) {
	vs := &store.Values{Limit: 64 << 20, Hint: 32 << 20}
	_, ok := vs.Add([]byte("x"))
	require.True(t, ok)
	require.Equal(t, 1, vs.Len())
	require.Equal(t, 32<<20, vs.Allocated())
}
