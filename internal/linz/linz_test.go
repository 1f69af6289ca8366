package linz

import (
	"errors"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/wire"
)

// op records one single-op batch called at call and answered at ret.
func op(h *History, client int, o wire.Op, r wire.Result, err error, call, ret int64) {
	h.Record(client, []wire.Op{o}, []wire.Result{r}, err, call, ret)
}

// step is one single-op batch of client 1 that got res and err.
type step struct {
	op  wire.Op
	res wire.Result
	err error
}

// sequence records steps of client 1 one after another: step i is
// called at 20i and answered at 20i+10.
func sequence(h *History, steps ...step) {
	for i, s := range steps {
		op(h, 1, s.op, s.res, s.err, int64(20*i), int64(20*i+10))
	}
}

// value is a result that carries v: a read's, or a write's previous value.
func value(v string) wire.Result { return wire.Result{Status: wire.StatusOK, Value: v} }

// mismatch is a refused conditional write's result, which found v.
func mismatch(v string) wire.Result { return wire.Result{Status: wire.StatusMismatch, Value: v} }

var (
	put1   = wire.Op{Code: wire.OpPut, Key: "k", Value: "1"}
	put2   = wire.Op{Code: wire.OpPut, Key: "k", Value: "2"}
	get    = wire.Op{Code: wire.OpGet, Key: "k"}
	ok     = wire.Result{Status: wire.StatusOK}
	absent = wire.Result{Status: wire.StatusNotFound}
)

func check(t *testing.T, h *History) porcupine.CheckResult {
	res, err := Check(h.Ops(), 10*time.Second, "")
	require.NoError(t, err)
	return res
}

// TestCheckCatchesStaleRead: a read that returns an overwritten value
// after the overwrite was acknowledged is not linearizable; the same read
// returning the new value is.
func TestCheckCatchesStaleRead(t *testing.T) {
	for _, tc := range []struct {
		read string
		want porcupine.CheckResult
	}{{"2", porcupine.Ok}, {"1", porcupine.Illegal}} {
		h := NewHistory()
		sequence(h, step{put1, ok, nil}, step{put2, ok, nil})
		op(h, 2, get, value(tc.read), nil, 40, 50)
		require.Equal(t, tc.want, check(t, h), "read %s", tc.read)
	}
}

// TestCheckCatchesLostWrite: an acknowledged put that a later read does
// not see is not linearizable.
func TestCheckCatchesLostWrite(t *testing.T) {
	h := NewHistory()
	op(h, 1, put1, ok, nil, 0, 10)
	op(h, 2, get, absent, nil, 20, 30)
	require.Equal(t, porcupine.Illegal, check(t, h))
}

// TestUnknownWriteMayApplyLater: a put whose outcome the client never
// learned may take effect at any time after its call, so a later read may
// or may not see it; a failed read is left out.
func TestUnknownWriteMayApplyLater(t *testing.T) {
	failed := errors.New("unavailable")
	for _, read := range []wire.Result{value("1"), absent} {
		h := NewHistory()
		op(h, 1, put1, wire.Result{Status: wire.StatusUnknown}, failed, 0, 10)
		op(h, 2, get, wire.Result{Status: wire.StatusUnavail}, failed, 15, 18)
		op(h, 2, get, read, nil, 20, 30)
		require.Len(t, h.Ops(), 2)
		require.Equal(t, porcupine.Ok, check(t, h))
	}
}

// TestAppliedOpsOfAFailedBatchCount: a batch split over shards can fail
// in one part (the error is set) while another part was applied. Its
// applied write is in the history, at the batch's times, so a later read
// of it is linearizable, and a later read that misses it is not; a get
// of the failed part is left out.
func TestAppliedOpsOfAFailedBatchCount(t *testing.T) {
	partial := errors.New("one part timed out")
	other := wire.Op{Code: wire.OpGet, Key: "elsewhere"}
	for _, tc := range []struct {
		read wire.Result
		want porcupine.CheckResult
	}{{value("1"), porcupine.Ok}, {absent, porcupine.Illegal}} {
		h := NewHistory()
		h.Record(1, []wire.Op{put1, other}, []wire.Result{ok, {Status: wire.StatusUnavail}}, partial, 0, 10)
		op(h, 2, get, tc.read, nil, 20, 30)
		require.Len(t, h.Ops(), 2)
		require.Equal(t, tc.want, check(t, h))
	}
}

func cas(expect, value string) wire.Op {
	return wire.Op{Code: wire.OpPutIf, Cond: wire.CondEqual, Key: "k", Expect: expect, Value: value}
}

// TestCheckCatchesDoubleCAS: two overlapping compare-and-sets from the same
// value cannot both have written (the second to take effect finds the
// first's value): the signature of a CAS decided before the log orders
// it. One written and one refused with the winner's value is
// linearizable; the refusal must name the value that beat it.
func TestCheckCatchesDoubleCAS(t *testing.T) {
	for _, tc := range []struct {
		name   string
		second wire.Result
		want   porcupine.CheckResult
	}{
		{"both written", value("1"), porcupine.Illegal},
		{"second refused", mismatch("2"), porcupine.Ok},
		{"second refused with a stale value", mismatch("1"), porcupine.Illegal},
		{"second refused as if absent", wire.Result{Status: wire.StatusMismatchNotFound}, porcupine.Illegal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHistory()
			op(h, 1, put1, ok, nil, 0, 10)
			op(h, 1, cas("1", "2"), value("1"), nil, 20, 40)
			op(h, 2, cas("1", "3"), tc.second, nil, 25, 45)
			require.Equal(t, tc.want, check(t, h))
		})
	}
}

// TestCheckConditionalPuts: put-if-absent, put-if-present and get-and-set
// must report the state they found and act on it.
func TestCheckConditionalPuts(t *testing.T) {
	nx := wire.Op{Code: wire.OpPutIf, Cond: wire.CondAbsent, Key: "k", Value: "nx"}
	xx := wire.Op{Code: wire.OpPutIf, Cond: wire.CondPresent, Key: "k", Value: "xx"}
	swap := wire.Op{Code: wire.OpPutIf, Cond: wire.CondAlways, Key: "k", Value: "sw"}
	lost := errors.New("lost")
	for _, tc := range []struct {
		name  string
		steps []step
		reads []wire.Result // of client 2, one after another after the steps
		want  porcupine.CheckResult
	}{
		{"nx on absent, then read", []step{{nx, absent, nil}, {get, value("nx"), nil}}, nil, porcupine.Ok},
		{"nx claims absent after a put", []step{{put1, ok, nil}, {nx, absent, nil}}, nil, porcupine.Illegal},
		{"nx refused but wrote", []step{{put1, ok, nil}, {nx, mismatch("1"), nil}, {get, value("nx"), nil}}, nil, porcupine.Illegal},
		{"xx on absent writes nothing", []step{{xx, wire.Result{Status: wire.StatusMismatchNotFound}, nil}, {get, absent, nil}}, nil, porcupine.Ok},
		{"swap returns the previous value", []step{{put1, ok, nil}, {swap, value("1"), nil}, {get, value("sw"), nil}}, nil, porcupine.Ok},
		{"swap returns a value never there", []step{{put1, ok, nil}, {swap, value("2"), nil}}, nil, porcupine.Illegal},
		{"unknown cas may apply later", []step{{put1, ok, nil}, {cas("1", "2"), wire.Result{Status: wire.StatusUnknown}, lost}}, []wire.Result{value("1"), value("2")}, porcupine.Ok},
		{"unknown cas cannot write what its condition refuses", []step{{put2, ok, nil}, {cas("1", "3"), wire.Result{Status: wire.StatusUnknown}, lost}}, []wire.Result{value("3")}, porcupine.Illegal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHistory()
			sequence(h, tc.steps...)
			for i, r := range tc.reads {
				at := int64(20 * (len(tc.steps) + i))
				op(h, 2, get, r, nil, at, at+10)
			}
			require.Equal(t, tc.want, check(t, h))
		})
	}
}

// TestObserve: what a client saw feeds its next compare-and-sets.
func TestObserve(t *testing.T) {
	seen := map[string]string{}
	Observe(seen, []wire.Op{get, put1}, []wire.Result{value("0"), ok})
	require.Equal(t, "1", seen["k"])
	Observe(seen, []wire.Op{cas("1", "5")}, []wire.Result{mismatch("4")})
	require.Equal(t, "4", seen["k"])
	Observe(seen, []wire.Op{cas("4", "5")}, []wire.Result{value("4")})
	require.Equal(t, "5", seen["k"])
	Observe(seen, []wire.Op{cas("5", "6")}, []wire.Result{{Status: wire.StatusUnknown}})
	require.Equal(t, "5", seen["k"], "an unknown outcome tells nothing")
	Observe(seen, []wire.Op{cas("5", "6")}, []wire.Result{{Status: wire.StatusMismatchNotFound}})
	_, ok := seen["k"]
	require.False(t, ok)
}
