package walfiles

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
	"github.com/stretchr/testify/require"
)

// sealedTestSegments is how many segments retainedBySegments fills, and
// sealedTestCall the bytes of each of its appends: a write buffer of 4
// MiB for each segment that keeps its writer.
const (
	sealedTestSegmentSize = 16 << 20 // raftstore's WALSegmentSize
	sealedTestSegments    = 6
	sealedTestEntry       = 192 << 10
	sealedTestCall        = 16 * sealedTestEntry
)

// TestSealedSegmentsLetGoOfTheirBuffers: raft-wal's own filer keeps a
// write buffer as large as its appends for every sealed segment; with
// sealingFiler only the tail's stays. Every entry reads back, while
// the segments seal under concurrent reads, and after the log reopens.
//
// With -short (the race detector's run, where copies cost 10 times
// more) only sealingFiler fills its segments.
func TestSealedSegmentsLetGoOfTheirBuffers(t *testing.T) {
	sealing := retainedBySegments(t, func(f types.SegmentFiler) types.SegmentFiler { return sealingFiler{f} })
	require.Less(t, sealing, int64(12<<20), "sealed segments kept their write buffers")
	if testing.Short() {
		return
	}
	plain := retainedBySegments(t, func(f types.SegmentFiler) types.SegmentFiler { return f })
	t.Logf("heap kept after %d segments: raft-wal's filer %d MiB, sealingFiler %d MiB", sealedTestSegments, plain>>20, sealing>>20)
	// The check itself: raft-wal's filer must show the cost it measures.
	require.Greater(t, plain, int64(sealedTestSegments-2)*4<<20, "raft-wal's own filer kept little: the measure cannot tell")
}

// retainedBySegments fills sealedTestSegments segments of a WAL whose
// filer wrap makes, reading entries back meanwhile, and returns the heap
// the open WAL keeps for them; it checks every entry, then again after
// the WAL reopens.
func retainedBySegments(t *testing.T, wrap func(types.SegmentFiler) types.SegmentFiler) int64 {
	dir := t.TempDir()
	open := func() *wal.WAL {
		w, err := wal.Open(dir, wal.WithSegmentSize(sealedTestSegmentSize),
			wal.WithSegmentFiler(wrap(segment.NewFiler(dir, noSyncFS{walfs.New()}))))
		require.NoError(t, err)
		return w
	}
	w := open()
	before := heapInUse()

	perSegment := sealedTestSegmentSize/sealedTestCall + 1
	var stored atomic.Uint64
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Add(1)
	go func() { // reads while segments seal and their writers go
		defer readers.Done()
		for i := uint64(1); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if last := stored.Load(); last > 0 {
				checkSealedEntry(t, w, 1+i%last)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	next := uint64(1)
	logs := make([]*raft.Log, sealedTestCall/sealedTestEntry)
	for i := range logs {
		logs[i] = &raft.Log{Term: 1, Type: raft.LogCommand, Data: make([]byte, sealedTestEntry)}
	}
	for c := 0; c < sealedTestSegments*perSegment; c++ {
		for _, l := range logs { // the WAL copies what it stores
			l.Index = next
			fillSealedEntry(l.Data, next)
			next++
		}
		require.NoError(t, w.StoreLogs(logs))
		stored.Store(next - 1)
	}
	close(stop)
	readers.Wait()
	kept := heapInUse() - before

	for i := uint64(1); i < next; i++ {
		checkSealedEntry(t, w, i)
	}
	require.NoError(t, w.Close())
	w = open()
	defer func() { require.NoError(t, w.Close()) }()
	for i := uint64(1); i < next; i++ {
		checkSealedEntry(t, w, i)
	}
	return kept
}

// fillSealedEntry makes d entry i's data: its index, then a byte of it.
func fillSealedEntry(d []byte, i uint64) {
	for j := range d {
		d[j] = byte(i)
	}
	binary.BigEndian.PutUint64(d, i)
}

func checkSealedEntry(t *testing.T, w *wal.WAL, i uint64) {
	var l raft.Log
	if err := w.GetLog(i, &l); err != nil {
		t.Errorf("entry %d: %v", i, err)
		return
	}
	d := l.Data
	if l.Index != i || len(d) != sealedTestEntry || binary.BigEndian.Uint64(d) != i || bytes.Count(d[8:], []byte{byte(i)}) != len(d)-8 {
		t.Errorf("entry %d read back as entry %d with other data", i, l.Index)
	}
}

// heapInUse returns the heap's live bytes after a collection.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
