package clustertest

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/linz"
	"github.com/batchkv/batchkv/wire"
)

// inBatches calls f with ops on keys prefix0..prefix{n-1}, 500 at a time,
// made by op, and the index of the first.
func inBatches(prefix string, n int, op func(key string, i int) wire.Op, f func(start int, ops []wire.Op)) {
	for start := 0; start < n; start += 500 {
		ops := make([]wire.Op, 0, 500)
		for i := start; i < min(n, start+500); i++ {
			ops = append(ops, op(fmt.Sprintf("%s%d", prefix, i), i))
		}
		f(start, ops)
	}
}

// PutAll writes n keys prefix0..prefix{n-1} in batches and fails the test
// on any error.
func PutAll(t testing.TB, cl *client.Client, prefix string, n int, value func(i int) string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	put := func(key string, i int) wire.Op { return wire.Op{Code: wire.OpPut, Key: key, Value: value(i)} }
	inBatches(prefix, n, put, func(_ int, ops []wire.Op) {
		res, err := cl.Do(ctx, ops)
		require.NoError(t, err)
		for _, r := range res {
			require.Equal(t, wire.StatusOK, r.Status)
		}
	})
}

// CheckAll reads the keys PutAll wrote and compares them.
func CheckAll(t testing.TB, cl *client.Client, prefix string, n int, value func(i int) string) {
	t.Helper()
	GetAll(t, cl, prefix, n, func(i int, key string, r wire.Result) {
		require.Equal(t, wire.StatusOK, r.Status, "key %s", key)
		require.Equal(t, value(i), r.Value, "key %s", key)
	})
}

// GetAll reads keys prefix0..prefix{n-1} in batches and calls check with
// each key's index, the key and its result; it fails the test if a batch
// fails.
func GetAll(t testing.TB, cl *client.Client, prefix string, n int, check func(i int, key string, r wire.Result)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	get := func(key string, _ int) wire.Op { return wire.Op{Code: wire.OpGet, Key: key} }
	inBatches(prefix, n, get, func(start int, ops []wire.Op) {
		res, err := cl.Do(ctx, ops)
		require.NoError(t, err)
		for j, r := range res {
			check(start+j, ops[j].Key, r)
		}
	})
}

// ValueOf returns a value for key i of a batch written under tag: the
// tag, i and up to 49 bytes of padding, so values differ in length.
func ValueOf(tag string) func(int) string {
	return func(i int) string { return fmt.Sprintf("%s-%d-%s", tag, i, strings.Repeat("x", i%50)) }
}

// Linearizable runs porcupine over a history (linz.Check, up to 60s) and
// returns its verdict; on a violation it writes the visualization to the
// temp dir and logs its path. The file stays only if the test fails: a
// test that plants a violation and expects it leaves nothing behind.
func Linearizable(t testing.TB, ops []porcupine.Operation) porcupine.CheckResult {
	t.Helper()
	path := filepath.Join(os.TempDir(), fmt.Sprintf("linearizability-%s-%d.html", filepath.Base(t.Name()), time.Now().UnixNano()))
	res, err := linz.Check(ops, 60*time.Second, path)
	require.NoError(t, err)
	if res == porcupine.Illegal {
		t.Logf("history is not linearizable; visualization written to %s", path)
		logSmallHistory(t, ops)
		t.Cleanup(func() {
			if !t.Failed() {
				_ = os.Remove(path)
			}
		})
	}
	return res
}

// historyLines is the most lines a failed check writes to the test log:
// the visualization stays on the machine that ran the test, and a short
// account in the log shows a CI failure without it.
const historyLines = 64

// logSmallHistory writes the history to the test log in call order, one
// line per op, or per run of one client's ops that read alike (a loop of
// reads), with call and return in milliseconds from the first call. A
// history that needs more than historyLines lines is not written.
func logSmallHistory(t testing.TB, ops []porcupine.Operation) {
	t.Helper()
	if len(ops) == 0 {
		return
	}
	ops = slices.Clone(ops)
	slices.SortStableFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	first := ops[0].Call
	ms := func(at int64) string {
		if at == linz.Unknown {
			return "never"
		}
		return fmt.Sprintf("%.3f ms", float64(at-first)/1e6)
	}
	var lines []string
	for i := 0; i < len(ops); {
		desc := linz.Describe(ops[i].Input.(linz.Input), ops[i].Output.(linz.Output))
		j := i + 1
		for j < len(ops) && ops[j].ClientId == ops[i].ClientId &&
			linz.Describe(ops[j].Input.(linz.Input), ops[j].Output.(linz.Output)) == desc {
			j++
		}
		times := ""
		if j-i > 1 {
			times = fmt.Sprintf(" ×%d", j-i)
		}
		lines = append(lines, fmt.Sprintf("client %d: %s%s, called %s, returned %s", ops[i].ClientId, desc, times, ms(ops[i].Call), ms(ops[j-1].Return)))
		if len(lines) > historyLines {
			return
		}
		i = j
	}
	for _, l := range lines {
		t.Log(l)
	}
}
