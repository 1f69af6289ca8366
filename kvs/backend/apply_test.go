package backend

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/kvs/stats"
	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
)

// readBig applies a batch of 70 gets of one 1 MiB value (more than a
// frame holds) through an Applier keeping a reply budget of limit bytes,
// and returns how many were answered with the value.
func readBig(t *testing.T, limit int64) (served int) {
	t.Helper()
	st, ok := store.New(store.DefaultKind)
	require.True(t, ok)
	big := strings.Repeat("x", wire.MaxValueBytes)
	a := NewApplier(&stats.Stats{}, NewBudget(limit))
	a.apply(st, []wire.Op{{Code: wire.OpPut, Key: "big", Value: big}}, make([]wire.Result, 1), nil)
	ops := make([]wire.Op, 70)
	for i := range ops {
		ops[i] = wire.Op{Code: wire.OpGet, Key: "big"}
	}
	results := make([]wire.Result, len(ops))
	cl := &Call{Conn: NewBudget(limit)}
	a.apply(st, ops, results, cl)
	for i, r := range results {
		switch r.Status {
		case wire.StatusOK:
			require.Equal(t, served, i, "the values read are the first gets'")
			require.Equal(t, big, r.Value)
			served++
		default:
			require.Equal(t, wire.StatusTooLarge, r.Status, "get %d", i)
		}
	}
	a.Release(cl)
	return served
}

// TestOneBatchReadsAtMostHalfTheReplyBudget: a batch reads values up to
// half the server's reply budget, so that no one batch held unread takes
// the server over alone, and the gets past that answer TooLarge; a value
// of the largest size is read whatever the budget; and a frame's worth at
// the most.
func TestOneBatchReadsAtMostHalfTheReplyBudget(t *testing.T) {
	require.Equal(t, 8, readBig(t, 16<<20), "half of a 16 MiB budget: eight 1 MiB values")
	require.Equal(t, 1, readBig(t, 512<<10), "one value of the largest size, under a smaller budget")
	require.Equal(t, maxReplyValues/wire.MaxValueBytes, readBig(t, 1<<40), "a frame's worth under a budget larger than a frame")
}

// TestClosedBudgetReadsNoValues: once its connection's reply budget is
// closed (the connection is, and the reply can never be written), a batch
// with gets reads no value: its gets, and its conditional puts of a key
// present, answer TooLarge (such a put is not applied), it charges
// nothing, and its other writes are applied in order. Once the server's
// is closed (the server is closing), such a batch first waits for its
// connection's to close, so that a reply without its values is never
// written. A batch whose budgets are open reads as before; so does one
// of no connection, and one without gets, whose conditional puts read
// the old values whatever the budgets.
func TestClosedBudgetReadsNoValues(t *testing.T) {
	for _, closing := range []string{"connection", "server"} {
		t.Run(closing, func(t *testing.T) {
			st, ok := store.New(store.DefaultKind)
			require.True(t, ok)
			server := NewBudget(16 << 20)
			a := NewApplier(&stats.Stats{}, server)
			cl := &Call{Conn: NewBudget(4 << 20)}
			get := func(key string) wire.Result {
				res := make([]wire.Result, 1)
				a.apply(st, []wire.Op{{Code: wire.OpGet, Key: key}}, res, nil)
				return res[0]
			}
			ops := []wire.Op{{Code: wire.OpPut, Key: "k", Value: "v1"}, {Code: wire.OpGet, Key: "k"},
				{Code: wire.OpPutIf, Cond: wire.CondEqual, Key: "k", Expect: "v1", Value: "v2"},
				{Code: wire.OpPut, Key: "j", Value: "j1"}}
			results := make([]wire.Result, len(ops))
			a.apply(st, ops, results, cl)
			require.Equal(t, []wire.Result{{Status: wire.StatusOK}, {Status: wire.StatusOK, Value: "v1"},
				{Status: wire.StatusOK, Value: "v1"}, {Status: wire.StatusOK}}, results)
			require.Positive(t, cl.Conn.Held(), "an open call's reply is charged")
			a.Release(cl)

			if closing == "connection" {
				cl.Conn.Close()
			} else {
				server.Close()
			}
			ops[0].Value, ops[2].Expect, ops[2].Value, ops[3].Value = "v3", "v3", "v4", "j2"
			done := make(chan struct{})
			go func() {
				defer close(done)
				a.apply(st, ops, results, cl)
			}()
			if closing == "server" {
				select {
				case <-done:
					t.Fatal("a batch of an open connection went on while the server closed")
				case <-time.After(100 * time.Millisecond):
				}
				cl.Conn.Close()
			}
			<-done
			require.Equal(t, []wire.Result{{Status: wire.StatusOK}, {Status: wire.StatusTooLarge},
				{Status: wire.StatusTooLarge}, {Status: wire.StatusOK}}, results)
			require.Zero(t, cl.Conn.Held(), "nothing charged")
			require.Zero(t, server.Held())
			require.Equal(t, wire.Result{Status: wire.StatusOK, Value: "v3"}, get("k"), "the put applied, the conditional put not")
			require.Equal(t, wire.Result{Status: wire.StatusOK, Value: "j2"}, get("j"))

			putIf := []wire.Op{{Code: wire.OpPutIf, Cond: wire.CondEqual, Key: "k", Expect: "v3", Value: "v5"}}
			a.apply(st, putIf, results[:1], cl)
			require.Equal(t, wire.Result{Status: wire.StatusOK, Value: "v3"}, results[0], "a batch without gets reads the old value")
			require.Equal(t, wire.Result{Status: wire.StatusOK, Value: "v5"}, get("k"))
		})
	}
}
