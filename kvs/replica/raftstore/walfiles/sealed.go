package walfiles

import (
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft-wal/types"
)

// raft-wal keeps the writer of every segment it wrote as that segment's
// reader once the segment is sealed, and with it the writer's buffer: as
// large as the largest append the segment took, rounded up to a power of
// two. Under a write-heavy load of large values at RF=3 those buffers
// were as large as the log on disk (1.8 GB of heap at 1.9 GB of log, the
// Raft log kept by entry count), outside every share of -max-memory.
// sealingFiler hands raft-wal writers that, once sealed, read through a
// reader of the file (which looks entries up in the segment's index on
// disk) and let the writer and its buffer go.

// sealingFiler is a SegmentFiler whose writers let go of their buffers
// once sealed.
type sealingFiler struct{ types.SegmentFiler }

// Create implements types.SegmentFiler.
func (f sealingFiler) Create(info types.SegmentInfo) (types.SegmentWriter, error) {
	w, err := f.SegmentFiler.Create(info)
	if err != nil {
		return nil, err
	}
	return newSealingWriter(f.SegmentFiler, info, w), nil
}

// RecoverTail implements types.SegmentFiler.
func (f sealingFiler) RecoverTail(info types.SegmentInfo) (types.SegmentWriter, error) {
	w, err := f.SegmentFiler.RecoverTail(info)
	if err != nil {
		return nil, err
	}
	return newSealingWriter(f.SegmentFiler, info, w), nil
}

// sealingWriter is the tail segment's writer until the segment seals,
// then a reader of the sealed file. raft-wal appends, seals and asks
// Sealed under its write lock, one call at a time; GetLog and LastIndex
// come from readers at any time.
type sealingWriter struct {
	filer types.SegmentFiler
	info  types.SegmentInfo

	w          types.SegmentWriter // until released: only raft-wal's writing calls touch it
	indexStart uint64              // set when released
	last       atomic.Uint64       // LastIndex once released

	mu sync.RWMutex
	r  types.SegmentReader // guarded by mu: w, then the sealed file's reader
}

func newSealingWriter(filer types.SegmentFiler, info types.SegmentInfo, w types.SegmentWriter) *sealingWriter {
	return &sealingWriter{filer: filer, info: info, w: w, r: w}
}

// Append implements types.SegmentWriter.
func (s *sealingWriter) Append(entries []types.LogEntry) error {
	if s.w == nil {
		return types.ErrSealed
	}
	return s.w.Append(entries)
}

// Sealed implements types.SegmentWriter. raft-wal asks after every
// append; the first time the answer is yes, the writer is released.
func (s *sealingWriter) Sealed() (bool, uint64, error) {
	if s.w == nil {
		return true, s.indexStart, nil
	}
	sealed, indexStart, err := s.w.Sealed()
	if err == nil && sealed {
		s.release(indexStart)
	}
	return sealed, indexStart, err
}

// ForceSeal implements types.SegmentWriter. A forced seal (raft-wal
// truncating the log's tail) keeps its writer: it is rare, and raft-wal
// then bounds the segment below what the writer wrote.
func (s *sealingWriter) ForceSeal() (uint64, error) {
	if s.w == nil {
		return s.indexStart, nil
	}
	return s.w.ForceSeal()
}

// LastIndex implements types.SegmentWriter.
func (s *sealingWriter) LastIndex() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.w == nil {
		return s.last.Load()
	}
	return s.w.LastIndex()
}

// GetLog implements types.SegmentReader.
func (s *sealingWriter) GetLog(idx uint64) (*types.PooledBuffer, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.r.GetLog(idx)
}

// Close implements io.Closer.
func (s *sealingWriter) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.Close()
}

// release opens the sealed segment for reading and closes its writer. If
// the file cannot be opened the writer stays, as raft-wal would keep it.
func (s *sealingWriter) release(indexStart uint64) {
	info := s.info
	info.IndexStart = indexStart
	info.MaxIndex = s.w.LastIndex()
	r, err := s.filer.Open(info)
	if err != nil {
		return
	}
	s.mu.Lock()
	w := s.w
	s.last.Store(info.MaxIndex)
	s.indexStart = indexStart
	s.r, s.w = r, nil
	s.mu.Unlock()
	_ = w.Close()
}
