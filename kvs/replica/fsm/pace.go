package fsm

import (
	"sync/atomic"
	"time"
)

// DefaultSnapshotShare is the share of the wall time a snapshot being
// written may spend writing: a quarter. Unpaced, a 46 MB snapshot took
// 130 ms of CPU in one burst, which on a server held to half a CPU
// delayed the batches served meanwhile by up to 100 ms (docs/replication.md).
const DefaultSnapshotShare = 0.25

// paceChunk is how many bytes a snapshot writes between two pauses:
// well under a millisecond of work, so a pause comes before a batch
// waiting for the CPU has waited long.
const paceChunk = 256 << 10

// maxPause bounds one pause. While a snapshot is written, the store keeps
// every record the view may read, overwritten or not, so a snapshot that
// took minutes would hold minutes of writes; with the bound, pacing adds
// at most 40 ms per MiB (under 2 s for the chaos shard's 46 MB).
const maxPause = 10 * time.Millisecond

// pacer spreads a snapshot's writing over time. After each paceChunk
// bytes it sleeps for as long as the chunk took, times (1-share)/share,
// and at most maxPause, so that the writer is busy at most share of the
// time while its chunks are quick. A chunk that took long because the CPU
// was busy with other work makes the next pause longer too, up to
// maxPause: the snapshot yields most when the load needs the CPU most.
type pacer struct {
	share   float64 // in (0, 1); anything else writes unpaced
	pending int     // bytes written since the last pause
	since   time.Time
	sleep   func(time.Duration)
	hurry   *atomic.Bool // once true, no more pauses (the replica closes)
}

// newPacer returns a pacer that lets the writer be busy share of the
// time, until hurry is set; a share outside (0, 1) paces nothing.
func newPacer(share float64, hurry *atomic.Bool) *pacer {
	return &pacer{share: share, since: time.Now(), sleep: time.Sleep, hurry: hurry}
}

// start marks the start of the writing: the first chunk's time counts
// from here.
func (p *pacer) start() { p.since = time.Now() }

// wrote notes that n more bytes were written, and pauses once a chunk's
// worth has been.
func (p *pacer) wrote(n int) {
	if p.share <= 0 || p.share >= 1 || p.hurry.Load() {
		return
	}
	if p.pending += n; p.pending < paceChunk {
		return
	}
	p.pending = 0
	busy := time.Since(p.since)
	pause := min(time.Duration(float64(busy)*(1-p.share)/p.share), maxPause)
	p.sleep(pause)
	p.since = time.Now()
}
