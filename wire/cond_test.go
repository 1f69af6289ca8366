package wire

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckPutIf(t *testing.T) {
	big := strings.Repeat("e", MaxValueBytes+1)
	cases := []struct {
		name string
		op   Op
		want Status
	}{
		{"cas", Op{Code: OpPutIf, Cond: CondEqual, Key: "k", Expect: "a", Value: "b"}, StatusOK},
		{"cas on empty value", Op{Code: OpPutIf, Cond: CondEqual, Key: "k"}, StatusOK},
		{"absent", Op{Code: OpPutIf, Cond: CondAbsent, Key: "k", Value: "v"}, StatusOK},
		{"present", Op{Code: OpPutIf, Cond: CondPresent, Key: "k", Value: "v"}, StatusOK},
		{"always", Op{Code: OpPutIf, Cond: CondAlways, Key: "k", Value: "v"}, StatusOK},
		{"no condition", Op{Code: OpPutIf, Key: "k", Value: "v"}, StatusBadOp},
		{"unknown condition", Op{Code: OpPutIf, Cond: CondAlways + 1, Key: "k", Value: "v"}, StatusBadOp},
		{"expect without equal", Op{Code: OpPutIf, Cond: CondAbsent, Key: "k", Expect: "x", Value: "v"}, StatusBadOp},
		{"expect over the limit", Op{Code: OpPutIf, Cond: CondEqual, Key: "k", Expect: big, Value: "v"}, StatusTooLarge},
		{"value over the limit", Op{Code: OpPutIf, Cond: CondAbsent, Key: "k", Value: big}, StatusTooLarge},
		{"empty key", Op{Code: OpPutIf, Cond: CondAbsent, Value: "v"}, StatusBadKey},
		{"op past put-if", Op{Code: OpPutIf + 1, Key: "k"}, StatusBadOp},
		{"cond ignored by put", Op{Code: OpPut, Cond: 77, Key: "k", Expect: "x", Value: "v"}, StatusOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, c.op.Check())
		})
	}
}

func TestDecide(t *testing.T) {
	cases := []struct {
		name     string
		cond     Cond
		expect   string
		current  string
		present  bool
		want     Status
		applied  bool
		wasThere bool
	}{
		{"cas matches", CondEqual, "a", "a", true, StatusOK, true, true},
		{"cas differs", CondEqual, "a", "b", true, StatusMismatch, false, true},
		{"cas on absent key", CondEqual, "a", "", false, StatusMismatchNotFound, false, false},
		{"cas of empty value on absent key", CondEqual, "", "", false, StatusMismatchNotFound, false, false},
		{"cas of empty value", CondEqual, "", "", true, StatusOK, true, true},
		{"absent and absent", CondAbsent, "", "", false, StatusNotFound, true, false},
		{"absent but present", CondAbsent, "", "x", true, StatusMismatch, false, true},
		{"present and present", CondPresent, "", "x", true, StatusOK, true, true},
		{"present but absent", CondPresent, "", "", false, StatusMismatchNotFound, false, false},
		{"always on present", CondAlways, "", "x", true, StatusOK, true, true},
		{"always on absent", CondAlways, "", "", false, StatusNotFound, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			op := Op{Code: OpPutIf, Cond: c.cond, Key: "k", Expect: c.expect, Value: "new"}
			require.Equal(t, StatusOK, op.Check())
			st := op.Decide(c.current, c.present)
			require.Equal(t, c.want, st)
			require.Equal(t, c.applied, st.Applied())
			require.Equal(t, !c.applied, st.Mismatch())
			require.True(t, st.Decided())
			require.Equal(t, c.wasThere, st.Present())
		})
	}
}
