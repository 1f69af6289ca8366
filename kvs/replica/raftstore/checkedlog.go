package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/internal/bugswitch"
)

// Every entry a replica writes to its Raft log carries a CRC-32C of its
// index, term, type, data and extensions, so that an entry damaged on
// disk is found when it is read (on replay, or to send it to a
// follower), rather than applied and served. Neither raft-wal nor
// raft-boltdb checks what it reads: raft-wal checks a CRC only over the
// last batch of its tail segment, when it opens, and BoltDB none.
//
// The checksum travels in the entry's Extensions, which both log formats
// store as they store Data: the stored extensions are
//
//	checksumTag | CRC-32C (4 bytes, little endian) | the entry's own extensions
//
// and GetLog gives the entry back with its own extensions only. Each
// replica checksums its own copy: a leader sends entries without the
// checksum, and the follower adds its own when it stores them.
const (
	checksumTag = 0xc5
	checksumLen = 5
)

// castagnoli is CRC-32C's table, which the CPU computes in hardware.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checkedLog is a replica's log store that checksums every entry it
// stores and verifies every entry it reads. A failed check calls
// onCorrupt (once) as well as returning the error. The store under it
// must copy what StoreLogs gives it (raft-wal and BoltDB encode each
// entry): the copies it passes are reused.
type checkedLog struct {
	Store
	// fileOf names the file that holds entry index, for messages.
	fileOf func(index uint64) string
	// legacy accepts entries without a checksum: the log was written
	// before checksums (see openCheckedLog).
	legacy    bool
	onCorrupt atomic.Pointer[func(error)]
	reported  atomic.Bool

	mu   sync.Mutex // guards the buffers StoreLogs reuses
	logs []raft.Log
	ptrs []*raft.Log
	ext  []byte
}

// entryChecksum returns the CRC-32C of l's index, term, type, data and
// extensions ext.
func entryChecksum(l *raft.Log, ext []byte) uint32 {
	var head [17]byte
	binary.LittleEndian.PutUint64(head[0:8], l.Index)
	binary.LittleEndian.PutUint64(head[8:16], l.Term)
	head[16] = byte(l.Type)
	sum := crc32.Update(0, castagnoli, head[:])
	var n [binary.MaxVarintLen64]byte
	sum = crc32.Update(sum, castagnoli, n[:binary.PutUvarint(n[:], uint64(len(l.Data)))])
	sum = crc32.Update(sum, castagnoli, l.Data)
	return crc32.Update(sum, castagnoli, ext)
}

// StoreLog implements raft.LogStore.
func (c *checkedLog) StoreLog(l *raft.Log) error { return c.StoreLogs([]*raft.Log{l}) }

// StoreLogs implements raft.LogStore: it stores copies of logs whose
// extensions carry their checksums. The entries themselves are not
// changed: raft's log cache keeps them, and a leader sends them on.
func (c *checkedLog) StoreLogs(logs []*raft.Log) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	size := 0
	for _, l := range logs {
		size += checksumLen + len(l.Extensions)
	}
	if cap(c.ext) < size {
		c.ext = make([]byte, 0, size)
	}
	if cap(c.logs) < len(logs) {
		c.logs, c.ptrs = make([]raft.Log, len(logs)), make([]*raft.Log, len(logs))
	}
	ext, copies, ptrs := c.ext[:0], c.logs[:len(logs)], c.ptrs[:len(logs)]
	for i, l := range logs {
		start := len(ext)
		ext = append(ext, checksumTag)
		ext = binary.LittleEndian.AppendUint32(ext, entryChecksum(l, l.Extensions))
		ext = append(ext, l.Extensions...)
		copies[i] = *l
		copies[i].Extensions = ext[start:len(ext):len(ext)]
		ptrs[i] = &copies[i]
	}
	err := c.Store.StoreLogs(ptrs)
	clear(copies) // drop the references to the entries' data
	return err
}

// GetLog implements raft.LogStore: it reads entry index and verifies it.
func (c *checkedLog) GetLog(index uint64, l *raft.Log) error {
	if _, err := c.getLog(index, l); err != nil {
		var ce *CorruptError
		if errors.As(err, &ce) {
			c.report(err)
		}
		return err
	}
	return nil
}

// getLog reads entry index into l and verifies it, without reporting;
// checked says whether the entry carried a checksum. A store that panics
// on a damaged page (BoltDB does) returns an error.
func (c *checkedLog) getLog(index uint64, l *raft.Log) (checked bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &CorruptError{File: c.fileOf(index), Index: index, Detail: fmt.Sprintf("the log store failed reading it: %v", p)}
		}
	}()
	if err := c.Store.GetLog(index, l); err != nil {
		return false, err
	}
	return c.verify(index, l)
}

// verify checks the entry read for index, and strips its checksum.
func (c *checkedLog) verify(index uint64, l *raft.Log) (checked bool, err error) {
	bad := func(format string, args ...any) (bool, error) {
		return false, &CorruptError{File: c.fileOf(index), Index: index, Detail: fmt.Sprintf(format, args...)}
	}
	if l.Index != index {
		return bad("the store gave entry %d", l.Index)
	}
	ext := l.Extensions
	if len(ext) < checksumLen || ext[0] != checksumTag {
		if c.legacy {
			return false, nil
		}
		return bad("no checksum")
	}
	want := binary.LittleEndian.Uint32(ext[1:checksumLen])
	l.Extensions = ext[checksumLen:]
	if len(l.Extensions) == 0 {
		l.Extensions = nil
	}
	if bugswitch.UncheckedData.Load() {
		return true, nil
	}
	if got := entryChecksum(l, l.Extensions); got != want {
		return bad("checksum %08x, stored %08x", got, want)
	}
	return true, nil
}

// report passes the first damage found to onCorrupt.
func (c *checkedLog) report(err error) {
	if f := c.onCorrupt.Load(); f != nil && c.reported.CompareAndSwap(false, true) {
		(*f)(err)
	}
}

// setOnCorrupt sets what a failed check outside verifyAll calls.
func (c *checkedLog) setOnCorrupt(f func(error)) { c.onCorrupt.Store(&f) }

// verifyAll reads and verifies every entry of the log, and returns the
// first damaged one, or any index in the log's range it cannot read. It
// reports whether every entry carries a checksum.
func (c *checkedLog) verifyAll() (allChecked bool, err error) {
	first, err := c.FirstIndex()
	if err != nil {
		return false, &CorruptError{File: c.fileOf(0), Detail: fmt.Sprintf("first index: %v", err)}
	}
	last, err := c.LastIndex()
	if err != nil {
		return false, &CorruptError{File: c.fileOf(0), Detail: fmt.Sprintf("last index: %v", err)}
	}
	allChecked = true
	if last == 0 {
		return true, nil
	}
	var l raft.Log
	for i := first; i <= last; i++ {
		l = raft.Log{}
		checked, err := c.getLog(i, &l)
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) {
				err = &CorruptError{File: c.fileOf(i), Index: i, Detail: err.Error()}
			}
			return false, err
		}
		allChecked = allChecked && checked
	}
	return allChecked, nil
}

// Close closes the log store under the checks.
func (c *checkedLog) Close() error { return Close(c.Store) }

// IsMonotonic implements raft.MonotonicLogStore: it passes on what the
// store under it says. Raft then drops the whole log when it installs a
// snapshot past it, which raft-wal needs (it takes no entry after a gap).
func (c *checkedLog) IsMonotonic() bool { return isMonotonic(c.Store) }

// isMonotonic reports whether s is a raft.MonotonicLogStore that says so.
func isMonotonic(s Store) bool {
	m, ok := s.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}
