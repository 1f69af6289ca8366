package fsm

import (
	"math"
	"runtime"
)

// Raft hands committed entries to the state machine's goroutine and
// counts them applied at once (raft.AppliedIndex), before Apply has run:
// a replica that is catching up can report an applied index its store
// has not reached yet, for as long as its backlog lasts. So what the
// store holds is described with the index the machine itself last
// applied, read around the scan that describes it.

// Content describes the shard's store at one point of its log.
type Content struct {
	// Index is the index of the last command entry applied to the store
	// (or of the one a restored snapshot was taken after). Replicas that
	// have applied the same log hold the same Index whatever entries
	// without commands (barriers, configurations) follow it.
	Index uint64
	// Digest is the order-independent hash of the store's pairs (digest).
	Digest uint64
	// Keys is how many keys the store holds.
	Keys int
}

// applied ends the Apply of the entry at index.
func (f *Machine) applied(index uint64) {
	f.lastCommand.Store(index)
	f.changes.Add(1)
}

// contentTries bounds the scans SettledContent makes for one answer:
// each reads the whole store, and under a steady load most meet an apply.
const contentTries = 3

// SettledContent is Content, asked again while an apply changed the
// store during the scan; ok is false when one did during each of
// contentTries scans.
func (f *Machine) SettledContent() (c Content, ok bool) {
	for range contentTries {
		if c, ok = f.Content(); ok {
			return c, true
		}
		runtime.Gosched()
	}
	return c, false
}

// unknownIndex is lastCommand after a restore from a snapshot written
// without its index (by an earlier version), until the next command.
const unknownIndex = math.MaxUint64

// Content scans the store and returns what it holds. ok is false when an
// Apply or Restore changed the store during the scan (the digest then
// mixes two states, and the caller asks again), and while the store came
// from a snapshot that did not say which entry it holds, until the next
// command is applied.
func (f *Machine) Content() (c Content, ok bool) {
	before := f.changes.Load()
	if before%2 == 1 {
		return Content{}, false
	}
	if c.Index = f.lastCommand.Load(); c.Index == unknownIndex {
		return Content{}, false
	}
	c.Digest, c.Keys = f.digest(), f.current().Len()
	return c, f.changes.Load() == before
}
