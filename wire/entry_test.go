package wire

import (
	"strconv"
	"strings"
	"testing"
)

// overEntryBound is EntryBound's verdict alone.
func overEntryBound(ops []Op) bool {
	_, over := EntryBound(ops)
	return over
}

func putsOf(n, valueBytes int) []Op {
	ops := make([]Op, n)
	for i := range ops {
		ops[i] = Op{Code: OpPut, Key: "k" + strconv.Itoa(i), Value: strings.Repeat("v", valueBytes)}
	}
	return ops
}

// TestEntryCutsKeepEveryRunWithinTheBound: every run of a large part is
// within MaxEntryBytes or one op, the runs cover the part in order, and
// the server's own check (EntryBound) passes each.
func TestEntryCutsKeepEveryRunWithinTheBound(t *testing.T) {
	cases := map[string][]Op{
		"small values":        putsOf(20000, 128),
		"16 KiB values":       putsOf(1000, 16<<10),
		"values at the limit": putsOf(5, MaxValueBytes),
		"mixed": append(append(putsOf(3, 100), putsOf(2, MaxValueBytes)...),
			Op{Code: OpGet, Key: "g"}, Op{Code: OpDelete, Key: "d"}),
	}
	for name, ops := range cases {
		t.Run(name, func(t *testing.T) {
			cuts, sizes := EntryCuts(ops)
			if cuts[0] != 0 || cuts[len(cuts)-1] != len(ops) || len(cuts) < 3 {
				t.Fatalf("cuts %v do not cut %d ops", cuts, len(ops))
			}
			for i := 0; i+1 < len(cuts); i++ {
				run := ops[cuts[i]:cuts[i+1]]
				if len(run) == 0 {
					t.Fatalf("empty run at %d: %v", i, cuts)
				}
				if overEntryBound(run) {
					t.Fatalf("run %d (%d ops, %d bytes) is over the bound", i, len(run), BatchArgsBound(run))
				}
				if sizes[i] != BatchArgsBound(run) {
					t.Fatalf("run %d's size is %d, its bound %d", i, sizes[i], BatchArgsBound(run))
				}
				// Runs are as large as they may be: the next op would not fit.
				if i+2 < len(cuts) && !overEntryBound(ops[cuts[i]:cuts[i+1]+1]) {
					t.Fatalf("run %d ends early at %d", i, cuts[i+1])
				}
			}
		})
	}
}

// TestEntryCutsLeaveSmallAndReadOnlyPartsWhole: a part within the bound,
// and one that only reads (it makes no entry), is one run.
func TestEntryCutsLeaveSmallAndReadOnlyPartsWhole(t *testing.T) {
	gets := make([]Op, 20000)
	for i := range gets {
		gets[i] = Op{Code: OpGet, Key: strings.Repeat("k", 100) + strconv.Itoa(i)}
	}
	for name, ops := range map[string][]Op{"2000 small puts": putsOf(2000, 128), "read-only": gets, "one large put": putsOf(1, MaxValueBytes)} {
		if cuts, _ := EntryCuts(ops); len(cuts) != 2 || cuts[1] != len(ops) {
			t.Errorf("%s: cut at %v", name, cuts)
		}
	}
	if overEntryBound(putsOf(1, MaxValueBytes)) {
		t.Error("one op over the bound is refused; a value of MaxValueBytes must be writable")
	}
	if !overEntryBound(putsOf(2, MaxValueBytes)) {
		t.Error("two values at the limit are within the bound")
	}
}

func TestDistinctKeys(t *testing.T) {
	ops := putsOf(100, 1)
	if !DistinctKeys(ops) {
		t.Fatal("distinct keys reported as repeated")
	}
	ops = append(ops, Op{Code: OpGet, Key: "k42"})
	if DistinctKeys(ops) {
		t.Fatal("a repeated key was not found")
	}
}
