package raftstore

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"

	"github.com/batchkv/batchkv/kvs/replica/diskspace"
)

// spaceLog is a shard's log store on a disk that may fill. It refuses
// appends that carry commands while its server's disk refuses them
// (diskWatch.refuses), and it mends a WAL that ran out of space anyway.
//
// raft-wal preallocates each segment file. When it cannot create the
// next one it keeps the sealed segment as its tail and answers every
// later append ErrSealed until it is opened again (its rotation error is
// only logged). So once an append fails for want of space, spaceLog
// closes the WAL and opens it again, on the first append after the disk
// has room for a segment: the WAL's recovery then creates the segment its
// metadata names. Reads are served by the old WAL until then.
type spaceLog struct {
	disk   *diskspace.Watch
	dir    string
	reopen func() (Store, error) // nil: the store cannot be reopened
	log    *slog.Logger

	mu    sync.RWMutex // write-held while the inner store is replaced
	inner Store        // guarded by mu
	// outOfSpace says an append failed for want of space; the inner
	// store needs reopening.
	outOfSpace atomic.Bool
}

// newSpaceLog wraps inner, a log store in dir that reopen opens again.
func newSpaceLog(inner Store, dir string, disk *diskspace.Watch, reopen func() (Store, error), log *slog.Logger) *spaceLog {
	return &spaceLog{inner: inner, dir: dir, disk: disk, reopen: reopen, log: log}
}

// isOutOfSpace reports whether err says the disk had no room.
func isOutOfSpace(err error) bool {
	return errors.Is(err, wal.ErrSealed) || errors.Is(err, syscall.ENOSPC)
}

// hasCommand reports whether logs carry a command: the entries a full
// disk refuses (barriers, no-ops and configurations are small, and keep
// reads and elections going).
func hasCommand(logs []*raft.Log) bool {
	for _, l := range logs {
		if l.Type == raft.LogCommand {
			return true
		}
	}
	return false
}

// IsMonotonic implements raft.MonotonicLogStore: it passes on what the
// store under it says (see checkedLog.IsMonotonic).
func (s *spaceLog) IsMonotonic() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return isMonotonic(s.inner)
}

// StoreLog implements raft.LogStore.
func (s *spaceLog) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs implements raft.LogStore.
func (s *spaceLog) StoreLogs(logs []*raft.Log) error {
	if s.disk.Refuses() && hasCommand(logs) {
		return errLogRefused
	}
	if s.outOfSpace.Load() {
		if err := s.mend(); err != nil {
			return err
		}
	}
	s.mu.RLock()
	err := s.inner.StoreLogs(logs)
	s.mu.RUnlock()
	if err != nil && isOutOfSpace(err) && s.reopen != nil && !s.outOfSpace.Swap(true) {
		free, _, _ := diskspace.Free(s.dir)
		s.log.Error("Raft log out of space: appends fail until the data dir has room for a segment",
			"dir", s.dir, "free_bytes", free, "needs_bytes", WALSegmentSize, "err", err)
	}
	return err
}

// mend reopens the inner store once the disk has room for a new segment.
func (s *spaceLog) mend() error {
	free, _, err := diskspace.Free(s.dir)
	if err != nil {
		return err
	}
	if free < 2*WALSegmentSize {
		return fmt.Errorf("replica: Raft log in %s out of space: %d bytes free, a segment needs %d", s.dir, free, WALSegmentSize)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.outOfSpace.Load() {
		return nil // another append mended it
	}
	if err := Close(s.inner); err != nil {
		s.log.Warn("closing the Raft log to reopen it", "dir", s.dir, "err", err)
	}
	inner, err := s.reopen()
	if err != nil {
		// The old store is closed: reads fail until a later append
		// reopens it.
		return fmt.Errorf("replica: reopening the Raft log in %s: %w", s.dir, err)
	}
	s.inner = inner
	s.outOfSpace.Store(false)
	s.log.Warn("Raft log reopened: the data dir has room again", "dir", s.dir, "free_bytes", free)
	return nil
}

// FirstIndex implements raft.LogStore.
func (s *spaceLog) FirstIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.inner.FirstIndex()
}

// LastIndex implements raft.LogStore.
func (s *spaceLog) LastIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.inner.LastIndex()
}

// GetLog implements raft.LogStore.
func (s *spaceLog) GetLog(index uint64, l *raft.Log) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.inner.GetLog(index, l)
}

// DeleteRange implements raft.LogStore.
func (s *spaceLog) DeleteRange(lo, hi uint64) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.inner.DeleteRange(lo, hi)
}

// Set implements raft.StableStore.
func (s *spaceLog) Set(key, val []byte) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.inner.Set(key, val)
}

// Get implements raft.StableStore.
func (s *spaceLog) Get(key []byte) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.inner.Get(key)
}

// SetUint64 implements raft.StableStore.
func (s *spaceLog) SetUint64(key []byte, val uint64) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.inner.SetUint64(key, val)
}

// GetUint64 implements raft.StableStore.
func (s *spaceLog) GetUint64(key []byte) (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.inner.GetUint64(key)
}

// Close closes the inner store.
func (s *spaceLog) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Close(s.inner)
}
