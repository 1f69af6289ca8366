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
