package raftstore

import (
	"errors"
	"fmt"
)

// The errors of a replica's stores. ErrCorrupt (with a *CorruptError
// saying where) is damage found in the data, when it opens or later when
// a record is read; a *DamagedError is a replica whose data did not open
// because of it. errLogRefused is what the log of a full disk answers
// Raft, which retries.
var (
	// ErrCorrupt says a replica found its data damaged: a log entry or a
	// snapshot whose checksum fails, or a log that cannot be read. A
	// *CorruptError says where.
	ErrCorrupt = errors.New("replica: damaged data")

	// errLogRefused is what a full server's log store answers an append of
	// commands: Raft logs it, and the leader sends the entries again later.
	errLogRefused = errors.New("replica: log store refuses commands: the data dir is full")
)

// CorruptError is a damaged record: the file that holds it, and the log
// index or byte offset of the record.
type CorruptError struct {
	// File is the file the record is in (a log segment, the BoltDB log,
	// or a snapshot's state file), or the directory when the file is
	// unknown.
	File string
	// Index is the log index of a damaged entry; 0 for a snapshot.
	Index uint64
	// Detail says what is wrong.
	Detail string
}

// Error implements error.
func (e *CorruptError) Error() string {
	if e.Index > 0 {
		return fmt.Sprintf("%v: %s, log entry %d: %s", ErrCorrupt, e.File, e.Index, e.Detail)
	}
	return fmt.Sprintf("%v: %s: %s", ErrCorrupt, e.File, e.Detail)
}

// Unwrap makes errors.Is(err, ErrCorrupt) hold.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// DamagedError is a replica's data that did not open because it is
// damaged (Err wraps ErrCorrupt), with what the replica keeps if it is
// rebuilt from its peers.
type DamagedError struct {
	// Err says what is damaged.
	Err error
	// Kept is the replica's term and vote, and the last index its log
	// had.
	Kept Kept
}

// Error implements error.
func (e *DamagedError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *DamagedError) Unwrap() error { return e.Err }
