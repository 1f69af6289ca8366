package chaos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/wire"
)

func newTestBulk() (*bulkLoad, *bulkWorker) {
	b := newBulkLoad(BulkConfig{Goroutines: 1, Batch: 4, Keys: 4, Reads: 0.5, ValueSize: 16}, nil, nil, 1, &violations{})
	return b, b.ws[0]
}

func put(b *bulkLoad, w *bulkWorker, slot int, idx int64, st wire.Status) {
	b.check(w, slot, wire.Op{Code: wire.OpPut, Key: w.names[slot], Value: b.value(w.id, idx)}, wire.Result{Status: st}, nil)
}

func get(b *bulkLoad, w *bulkWorker, slot int, found bool, idx int64) {
	r := wire.Result{Status: wire.StatusNotFound}
	if found {
		r = wire.Result{Status: wire.StatusOK, Value: b.value(w.id, idx)}
	}
	b.check(w, slot, wire.Op{Code: wire.OpGet, Key: w.names[slot]}, r, nil)
}

// TestBulkCheckCatchesStaleAndLostReads: a get must return the last
// acknowledged write of its key; an older write (a stale read), nothing
// (a lost write) or a value nobody wrote is a violation.
func TestBulkCheckCatchesStaleAndLostReads(t *testing.T) {
	b, w := newTestBulk()
	get(b, w, 0, false, 0) // nothing written yet: right
	put(b, w, 0, 1, wire.StatusOK)
	get(b, w, 0, true, 1)
	require.Zero(t, b.v.count())
	put(b, w, 0, 2, wire.StatusOK)
	get(b, w, 0, true, 1) // stale
	require.Equal(t, 1, b.v.count())
	get(b, w, 0, false, 0) // lost
	require.Equal(t, 2, b.v.count())
	b.check(w, 0, wire.Op{Code: wire.OpGet, Key: w.names[0]}, wire.Result{Status: wire.StatusOK, Value: "junk"}, nil)
	require.Equal(t, 3, b.v.count())
}

// TestBulkFinalAllowsOnlyAckedOrUnknown: a key with a write of unknown
// outcome may end with that write or the last acknowledged one, nothing
// older; a key with no such write must end with its last write.
func TestBulkFinalAllowsOnlyAckedOrUnknown(t *testing.T) {
	b, w := newTestBulk()
	put(b, w, 0, 1, wire.StatusOK)
	put(b, w, 0, 2, wire.StatusOK)
	put(b, w, 0, 3, wire.StatusUnknown)
	require.True(t, w.keys[0].tainted)
	ok := func(idx int64) wire.Result { return wire.Result{Status: wire.StatusOK, Value: b.value(w.id, idx)} }
	b.final(w, 0, ok(2))
	b.final(w, 0, ok(3))
	require.Zero(t, b.v.count())
	b.final(w, 0, ok(1)) // an overwritten value came back
	require.Equal(t, 1, b.v.count())
	b.final(w, 0, wire.Result{Status: wire.StatusNotFound})
	require.Equal(t, 2, b.v.count())

	put(b, w, 1, 4, wire.StatusOK)
	b.final(w, 1, ok(4))
	require.Equal(t, 2, b.v.count())
	b.final(w, 1, wire.Result{Status: wire.StatusNotFound}) // lost
	require.Equal(t, 3, b.v.count())
}

// TestCompareReplicas: replicas at different applied indexes have not
// settled; settled replicas with different digests or key counts do not
// converge.
func TestCompareReplicas(t *testing.T) {
	rep := func(applied, digest uint64) wire.ShardStatus {
		return wire.ShardStatus{Shard: 0, Applied: applied, Digest: digest, Keys: 10}
	}
	settled, agree, _ := compareReplicas(map[int][]wire.ShardStatus{0: {rep(5, 1), rep(5, 1), rep(5, 1)}}, 1, 3)
	require.True(t, settled)
	require.True(t, agree)
	settled, _, _ = compareReplicas(map[int][]wire.ShardStatus{0: {rep(5, 1), rep(4, 1), rep(5, 1)}}, 1, 3)
	require.False(t, settled)
	settled, _, _ = compareReplicas(map[int][]wire.ShardStatus{0: {rep(5, 1), rep(5, 1)}}, 1, 3)
	require.False(t, settled)
	settled, agree, desc := compareReplicas(map[int][]wire.ShardStatus{0: {rep(5, 1), rep(5, 2), rep(5, 1)}}, 1, 3)
	require.True(t, settled)
	require.False(t, agree, desc)
}

// TestTermAndLeaderChanges: terms count from the last poll before the
// window; a poll round whose highest-term server did not answer (a lower
// maximum) is neither an election nor a wrap-around; polls with no leader
// do not count as leader changes.
func TestTermAndLeaderChanges(t *testing.T) {
	s := time.Second
	vs := []view{{at: 0, leader: 0, term: 3}, {at: 1 * s, leader: 0, term: 3}, {at: 2 * s, leader: -1, term: 2},
		{at: 3 * s, leader: 1, term: 4}, {at: 4 * s, leader: 1, term: 4}, {at: 5 * s, leader: -1, term: 4}, {at: 6 * s, leader: 1, term: 4}}
	require.Zero(t, termChanges(vs, 1*s, 3*s))
	require.EqualValues(t, 1, termChanges(vs, 1*s, 4*s))
	require.EqualValues(t, 1, termChanges(vs, 3*s, 7*s)) // the rise at 3 s, against the term before it
	require.Zero(t, termChanges(vs, 4*s, 7*s))
	require.Equal(t, 1, leaderChanges(vs, 0, 7*s))
	require.Equal(t, 0, leaderChanges(vs, 3*s, 7*s))
}

// ratioRun returns a run whose timeline has a 15 s baseline at 1000 ops/s
// and a 15 s fault window with the given seconds.
func ratioRun(fault []uint64) (*run, Window) {
	tl := newTimeline(time.Now())
	for range 15 {
		tl.secs = append(tl.secs, second{ops: 1000})
	}
	for _, n := range fault {
		tl.secs = append(tl.secs, second{ops: n})
	}
	tl.window(0, 15*time.Second, "baseline")
	w := Window{From: 15 * time.Second, To: time.Duration(15+len(fault)) * time.Second, Label: "fault"}
	tl.window(w.From, w.To, w.Label)
	return &run{tl: tl}, w
}

// TestRatioCheckCatchesSlowWindowsAndStalls: a fault window whose median
// second is below the threshold fails, and so does one whose median is
// fine but with more than a fifth of its seconds under half the
// baseline's median (stalls); a window that only wobbles passes.
func TestRatioCheckCatchesSlowWindowsAndStalls(t *testing.T) {
	results := func(fault []uint64) []bool {
		r, w := ratioRun(fault)
		r.ratioCheck("throughput", w, 0.75)
		var pass []bool
		for _, c := range r.res.Checks {
			pass = append(pass, c.Pass)
		}
		return pass
	}
	wobbly := []uint64{800, 1200, 900, 1100, 700, 1000, 950, 1050, 850, 1150, 600, 1000, 900, 1000, 1100}
	require.Equal(t, []bool{true, true}, results(wobbly))
	slow := []uint64{700, 700, 650, 720, 700, 690, 710, 700, 700, 705, 695, 700, 700, 700, 700}
	require.Equal(t, []bool{false, true}, results(slow), "median 70%")
	stalls := []uint64{1000, 0, 1000, 1000, 100, 1000, 1000, 50, 1000, 1000, 0, 1000, 1000, 1000, 1000}
	require.Equal(t, []bool{true, false}, results(stalls), "4 stalled seconds of 15")
}

// TestEvennessTally: a member with fewer keys or leaderships than its
// share is the worst, by how far it is off; a reading in which a shard
// has no leader, or two (a hand-over seen from both sides), is unsettled.
func TestEvennessTally(t *testing.T) {
	servers := []string{"a", "b"}
	led := func(sh, keys int) wire.ShardStatus { return wire.ShardStatus{Shard: sh, State: "Leader", Keys: keys} }
	follows := func(sh, keys int) wire.ShardStatus { return wire.ShardStatus{Shard: sh, State: "Follower", Keys: keys} }

	even := tallyEvenness(servers, 2, [][]wire.ShardStatus{{led(0, 100), follows(1, 100)}, {follows(0, 100), led(1, 100)}})
	require.Zero(t, even.keysOff)
	require.Zero(t, even.leadsOff)
	require.Empty(t, even.unsettled)

	// b leads both shards and holds fewer keys: a is 100% off its share
	// of leaders, and both 20% off their share of keys.
	uneven := tallyEvenness(servers, 2, [][]wire.ShardStatus{{follows(0, 120), follows(1, 120)}, {led(0, 80), led(1, 80)}})
	require.InDelta(t, 1.0, uneven.leadsOff, 1e-9)
	require.InDelta(t, 0.2, uneven.keysOff, 1e-9)
	require.Empty(t, uneven.unsettled)
	require.Equal(t, " a 0 b 2", uneven.leads)

	moving := tallyEvenness(servers, 2, [][]wire.ShardStatus{{led(0, 100), led(1, 100)}, {led(0, 100), follows(1, 100)}})
	require.Equal(t, "shard 0 has 2 leaders", moving.unsettled)
	none := tallyEvenness(servers, 2, [][]wire.ShardStatus{{follows(0, 100), led(1, 100)}, {follows(0, 100), follows(1, 100)}})
	require.Equal(t, "shard 0 has 0 leaders", none.unsettled)
}

// TestRatioCheckCountsHealthyPhasesAsBaseline: the seconds of a healthy
// phase between faults count as baseline with the first one's, so a
// fault window measured against a machine that slowed during the run is
// compared with both: 820 against a baseline of 1000 alone fails 85%,
// against 1000 and a later 900 (median 950) it passes.
func TestRatioCheckCountsHealthyPhasesAsBaseline(t *testing.T) {
	fault := []uint64{820, 820, 820, 820, 820, 820, 820, 820, 820, 820, 820, 820, 820, 820, 820}
	r, w := ratioRun(fault)
	r.ratioCheck("alone", w, 0.85)
	require.False(t, r.res.Checks[0].Pass)

	r, w = ratioRun(fault)
	for range 15 {
		r.tl.secs = append(r.tl.secs, second{ops: 900})
	}
	r.tl.window(30*time.Second, 45*time.Second, baselineAgain)
	r.ratioCheck("with the phase after", w, 0.85)
	require.True(t, r.res.Checks[0].Pass, r.res.Checks[0].Got)
	require.Contains(t, r.res.Checks[0].Got, "vs 950 ops/s")
}
