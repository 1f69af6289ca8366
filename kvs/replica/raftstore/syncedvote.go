package raftstore

import (
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// syncedVote is a BoltDB log opened with NoSync (-unsafe-nosync) whose
// term and vote are still synced: -unsafe-nosync gives up recent writes,
// never the promise a replica made in an election. A replica that forgets
// its vote after a power cut can vote twice in one term and elect two
// leaders. raft writes the term and vote through Set and SetUint64 and
// nothing else, so syncing the file after each keeps them (and whatever
// log entries precede them) on disk.
type syncedVote struct{ *raftboltdb.BoltStore }

// Set implements raft.StableStore and syncs.
func (s syncedVote) Set(k, v []byte) error {
	if err := s.BoltStore.Set(k, v); err != nil {
		return err
	}
	return s.BoltStore.Sync()
}

// SetUint64 implements raft.StableStore and syncs.
func (s syncedVote) SetUint64(k []byte, v uint64) error {
	if err := s.BoltStore.SetUint64(k, v); err != nil {
		return err
	}
	return s.BoltStore.Sync()
}
