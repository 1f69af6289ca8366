package raftstore

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// A replica that finds its data damaged does not serve it: its server
// wipes it, keeping only its term and vote (Kept), and opens it again
// empty, to be rebuilt by its peers (the replica package drives that).
// The functions below are the data's side of it.

// Kept is what a damaged replica keeps when it is rebuilt: its term
// and vote, so that it cannot vote twice in a term, and the last index
// its log had, which it waits to reach again before it votes at all.
type Kept struct {
	term, voteTerm uint64
	voteFor        []byte
	// Last is the last index the damaged log had.
	Last uint64
	// Known says the term and vote were readable.
	Known bool
}

// KeepState reads what a damaged replica keeps from its stores.
func KeepState(logs Store) Kept {
	var k Kept
	k.Last, _ = logs.LastIndex()
	term, err1 := logs.GetUint64(keyCurrentTerm)
	voteTerm, err2 := logs.GetUint64(keyLastVoteTerm)
	voteFor, err3 := logs.Get(keyLastVoteCand)
	k.term, k.voteTerm, k.voteFor = term, voteTerm, voteFor
	k.Known = err1 == nil && err2 == nil && err3 == nil
	return k
}

// keyCurrentTerm is where hashicorp/raft keeps a replica's term.
var keyCurrentTerm = []byte("CurrentTerm")

// WipeForRebuild deletes a damaged replica's data in dir and starts it
// again: an empty log (in format) holding only the kept term and vote,
// and rebuildMark holding the last index the damaged log had.
func WipeForRebuild(dir string, format LogFormat, k Kept, hlog hclog.Logger) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, DataDirMode); err != nil {
		return err
	}
	logs, err := openCheckedLog(dir, format, false, hlog)
	if err != nil {
		return err
	}
	if k.Known {
		err = errors.Join(logs.SetUint64(keyCurrentTerm, k.term), logs.SetUint64(keyLastVoteTerm, k.voteTerm),
			logs.Set(keyLastVoteCand, k.voteFor))
	}
	err = errors.Join(err, logs.Close())
	if err != nil {
		return err
	}
	return writeMark(dir, rebuildMark, strconv.FormatUint(k.Last, 10))
}

// RebuildTarget returns the last index recorded in dir's rebuildMark, and
// whether the replica is being rebuilt.
func RebuildTarget(dir string) (uint64, bool) {
	if dir == "" {
		return 0, false
	}
	raw, err := os.ReadFile(filepath.Join(dir, rebuildMark))
	if err != nil {
		return 0, false
	}
	n, _ := strconv.ParseUint(strings.TrimSpace(string(raw)), 10, 64)
	return n, true
}

// EndRebuild removes dir's rebuildMark: the replica's new log has caught
// up, and it votes again when it next opens.
func EndRebuild(dir string) error { return os.Remove(filepath.Join(dir, rebuildMark)) }

// LastVote returns the last vote recorded in s: its term and the
// candidate's address; ok false when s holds none.
func LastVote(s raft.StableStore) (term uint64, candidate []byte, ok bool) {
	term, err := s.GetUint64(keyLastVoteTerm)
	if err != nil {
		return 0, nil, false
	}
	candidate, err = s.Get(keyLastVoteCand)
	if err != nil {
		return 0, nil, false
	}
	return term, candidate, true
}

// The keys under which hashicorp/raft keeps a replica's last vote in its
// stable store (persistVote): the term, and the candidate's address.
var (
	keyLastVoteTerm = []byte("LastVoteTerm")
	keyLastVoteCand = []byte("LastVoteCand")
)

// checkedSnapshots is a replica's snapshot store that reports a snapshot
// that does not open (its checksum fails: Raft's file snapshot store
// verifies the whole file when it opens one), as when a leader reads one
// to send it to a follower.
type checkedSnapshots struct {
	raft.SnapshotStore
	onCorrupt func(error)
}

// Open implements raft.SnapshotStore.
func (s *checkedSnapshots) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, err := s.SnapshotStore.Open(id)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		s.onCorrupt(&CorruptError{File: "snapshot " + id, Detail: "the snapshot does not open: " + err.Error()})
	}
	return meta, rc, err
}
