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

var (
	put1 = wire.Op{Code: wire.OpPut, Key: "k", Value: "1"}
	put2 = wire.Op{Code: wire.OpPut, Key: "k", Value: "2"}
	get  = wire.Op{Code: wire.OpGet, Key: "k"}
	ok   = wire.Result{Status: wire.StatusOK}
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
		op(h, 1, put1, ok, nil, 0, 10)
		op(h, 1, put2, ok, nil, 20, 30)
		op(h, 2, get, wire.Result{Status: wire.StatusOK, Value: tc.read}, nil, 40, 50)
		require.Equal(t, tc.want, check(t, h), "read %s", tc.read)
	}
}

// TestCheckCatchesLostWrite: an acknowledged put that a later read does
// not see is not linearizable.
func TestCheckCatchesLostWrite(t *testing.T) {
	h := NewHistory()
	op(h, 1, put1, ok, nil, 0, 10)
	op(h, 2, get, wire.Result{Status: wire.StatusNotFound}, nil, 20, 30)
	require.Equal(t, porcupine.Illegal, check(t, h))
}

// TestUnknownWriteMayApplyLater: a put whose outcome the client never
// learned may take effect at any time after its call, so a later read may
// or may not see it; a failed read is left out.
func TestUnknownWriteMayApplyLater(t *testing.T) {
	failed := errors.New("unavailable")
	for _, read := range []wire.Result{{Status: wire.StatusOK, Value: "1"}, {Status: wire.StatusNotFound}} {
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
	}{{wire.Result{Status: wire.StatusOK, Value: "1"}, porcupine.Ok}, {wire.Result{Status: wire.StatusNotFound}, porcupine.Illegal}} {
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
		{"both written", wire.Result{Status: wire.StatusOK, Value: "1"}, porcupine.Illegal},
		{"second refused", wire.Result{Status: wire.StatusMismatch, Value: "2"}, porcupine.Ok},
		{"second refused with a stale value", wire.Result{Status: wire.StatusMismatch, Value: "1"}, porcupine.Illegal},
		{"second refused as if absent", wire.Result{Status: wire.StatusMismatchNotFound}, porcupine.Illegal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHistory()
			op(h, 1, put1, ok, nil, 0, 10)
			op(h, 1, cas("1", "2"), wire.Result{Status: wire.StatusOK, Value: "1"}, nil, 20, 40)
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
	for _, tc := range []struct {
		name  string
		build func(h *History)
		want  porcupine.CheckResult
	}{
		{"nx on absent, then read", func(h *History) {
			op(h, 1, nx, wire.Result{Status: wire.StatusNotFound}, nil, 0, 10)
			op(h, 1, get, wire.Result{Status: wire.StatusOK, Value: "nx"}, nil, 20, 30)
		}, porcupine.Ok},
		{"nx claims absent after a put", func(h *History) {
			op(h, 1, put1, ok, nil, 0, 10)
			op(h, 1, nx, wire.Result{Status: wire.StatusNotFound}, nil, 20, 30)
		}, porcupine.Illegal},
		{"nx refused but wrote", func(h *History) {
			op(h, 1, put1, ok, nil, 0, 10)
			op(h, 1, nx, wire.Result{Status: wire.StatusMismatch, Value: "1"}, nil, 20, 30)
			op(h, 1, get, wire.Result{Status: wire.StatusOK, Value: "nx"}, nil, 40, 50)
		}, porcupine.Illegal},
		{"xx on absent writes nothing", func(h *History) {
			op(h, 1, xx, wire.Result{Status: wire.StatusMismatchNotFound}, nil, 0, 10)
			op(h, 1, get, wire.Result{Status: wire.StatusNotFound}, nil, 20, 30)
		}, porcupine.Ok},
		{"swap returns the previous value", func(h *History) {
			op(h, 1, put1, ok, nil, 0, 10)
			op(h, 1, swap, wire.Result{Status: wire.StatusOK, Value: "1"}, nil, 20, 30)
			op(h, 1, get, wire.Result{Status: wire.StatusOK, Value: "sw"}, nil, 40, 50)
		}, porcupine.Ok},
		{"swap returns a value never there", func(h *History) {
			op(h, 1, put1, ok, nil, 0, 10)
			op(h, 1, swap, wire.Result{Status: wire.StatusOK, Value: "2"}, nil, 20, 30)
		}, porcupine.Illegal},
		{"unknown cas may apply later", func(h *History) {
			op(h, 1, put1, ok, nil, 0, 10)
			op(h, 1, cas("1", "2"), wire.Result{Status: wire.StatusUnknown}, errors.New("lost"), 20, 30)
			op(h, 2, get, wire.Result{Status: wire.StatusOK, Value: "1"}, nil, 40, 50)
			op(h, 2, get, wire.Result{Status: wire.StatusOK, Value: "2"}, nil, 60, 70)
		}, porcupine.Ok},
		{"unknown cas cannot write what its condition refuses", func(h *History) {
			op(h, 1, put2, ok, nil, 0, 10)
			op(h, 1, cas("1", "3"), wire.Result{Status: wire.StatusUnknown}, errors.New("lost"), 20, 30)
			op(h, 2, get, wire.Result{Status: wire.StatusOK, Value: "3"}, nil, 40, 50)
		}, porcupine.Illegal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHistory()
			tc.build(h)
			require.Equal(t, tc.want, check(t, h))
		})
	}
}

// TestObserve: what a client saw feeds its next compare-and-sets.
func TestObserve(t *testing.T) {
	seen := map[string]string{}
	Observe(seen, []wire.Op{get, put1}, []wire.Result{{Status: wire.StatusOK, Value: "0"}, ok})
	require.Equal(t, "1", seen["k"])
	Observe(seen, []wire.Op{cas("1", "5")}, []wire.Result{{Status: wire.StatusMismatch, Value: "4"}})
	require.Equal(t, "4", seen["k"])
	Observe(seen, []wire.Op{cas("4", "5")}, []wire.Result{{Status: wire.StatusOK, Value: "4"}})
	require.Equal(t, "5", seen["k"])
	Observe(seen, []wire.Op{cas("5", "6")}, []wire.Result{{Status: wire.StatusUnknown}})
	require.Equal(t, "5", seen["k"], "an unknown outcome tells nothing")
	Observe(seen, []wire.Op{cas("5", "6")}, []wire.Result{{Status: wire.StatusMismatchNotFound}})
	_, ok := seen["k"]
	require.False(t, ok)
}
