package fsm

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// TestPacerPausesInProportion writes chunks that each take about 2 ms and
// checks the pauses after them: three times the chunk's time at a share
// of a quarter, none unpaced.
func TestPacerPausesInProportion(t *testing.T) {
	const work = 2 * time.Millisecond
	for _, tc := range []struct {
		share    float64
		minRatio float64 // of each pause to the chunk's work
	}{
		{share: 0.25, minRatio: 3},
		{share: 0.5, minRatio: 1},
		{share: 1},
		{share: 0},
	} {
		p := newPacer(tc.share, new(atomic.Bool))
		var pauses []time.Duration
		p.sleep = func(d time.Duration) { pauses = append(pauses, d) }
		for range 5 {
			time.Sleep(work)
			p.wrote(paceChunk / 2)
			p.wrote(paceChunk / 2)
		}
		if tc.minRatio == 0 {
			if len(pauses) != 0 {
				t.Errorf("share %v: paused %v, want no pause", tc.share, pauses)
			}
			continue
		}
		if len(pauses) != 5 {
			t.Fatalf("share %v: %d pauses for 5 chunks: %v", tc.share, len(pauses), pauses)
		}
		for _, d := range pauses {
			if least := time.Duration(tc.minRatio * float64(work)); d < least {
				t.Errorf("share %v: paused %v after a chunk of %v, want at least %v", tc.share, d, work, least)
			}
		}
	}
}

// TestPacerBoundsAPause: a chunk slowed to 20 ms pauses maxPause, not
// the 60 ms its share would ask for, so that a snapshot written on a busy
// CPU does not hold the store's old records for minutes.
func TestPacerBoundsAPause(t *testing.T) {
	p := newPacer(0.25, new(atomic.Bool))
	var pauses []time.Duration
	p.sleep = func(d time.Duration) { pauses = append(pauses, d) }
	time.Sleep(20 * time.Millisecond)
	p.wrote(paceChunk)
	require.Equal(t, []time.Duration{maxPause}, pauses)
}

// TestHurryEndsThePauses: once its Machine hurries (the replica closes),
// a snapshot being written pauses no more.
func TestHurryEndsThePauses(t *testing.T) {
	src, snap, pauses := pacedSnapshot(t)
	defer snap.Release()
	src.Hurry()
	var sink memSink
	require.NoError(t, snap.Persist(&sink))
	require.Zero(t, *pauses)
}

// pacedSnapshot returns a Machine of 2 MiB of pairs with a share of a
// quarter, a snapshot of it, and the count of the pauses its writing
// takes (counted, not slept).
func pacedSnapshot(t *testing.T) (*Machine, raft.FSMSnapshot, *int) {
	src := New(Config{SnapshotShare: 0.25})
	value := strings.Repeat("v", 1000)
	for i := range 2 << 10 {
		src.current().Put(fmt.Sprintf("k%d", i), value)
	}
	snap, err := src.Snapshot()
	require.NoError(t, err)
	pauses := new(int)
	snap.(*fsmSnapshot).pace.sleep = func(time.Duration) { *pauses++ }
	return src, snap, pauses
}

// TestPersistIsPaced: a snapshot of 2 MiB made by a Machine with a share
// of a quarter pauses after each chunk it writes, and still restores the
// same pairs.
func TestPersistIsPaced(t *testing.T) {
	src, snap, pauses := pacedSnapshot(t)
	var sink memSink
	require.NoError(t, snap.Persist(&sink))
	snap.Release()
	require.GreaterOrEqual(t, *pauses, (2<<20)/paceChunk-1, "pauses while writing 2 MiB in chunks of %d bytes", paceChunk)

	dst := New(Config{})
	require.NoError(t, dst.Restore(io.NopCloser(&sink)))
	require.Equal(t, src.digest(), dst.digest())
}
