//go:build linux

package raftstore

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/internal/procstat"
)

// diskSyncFileBytes is the size of the file BenchmarkDiskSync appends to:
// a WAL segment's.
const diskSyncFileBytes = WALSegmentSize

// BenchmarkDiskSync measures what one durable append costs on the disk
// under the benchmark's temporary directory (set TMPDIR to try another),
// by four ways a log could make it durable. An iteration appends size
// bytes; cpu-us/op is the process's CPU time (user and system) per
// append, which is what a server on a busy machine pays for it.
//
//   - "fsync": appends to a file preallocated with fallocate, a new one
//     each time one fills, then fsync: what the Raft log (raft-wal) does.
//   - "overwrite-fdatasync": writes over blocks written and synced before,
//     then fdatasync, which then has no metadata to commit.
//   - "direct-dsync": the same, through O_DIRECT|O_DSYNC and 4 KiB-aligned
//     writes that return once the data is on the disk.
//   - "nosync": appends without syncing; the kernel's flusher threads
//     write the pages back later, and their CPU is not counted here, so
//     this row is a floor, not what a durable append would cost without
//     its sync.
//
// O_DIRECT needs a file system that has it (not tmpfs). raft-wal also
// syncs the directory once per new segment, which this leaves out.
//
// Run it with: go test ./kvs/replica/raftstore -run XXX -bench DiskSync
func BenchmarkDiskSync(b *testing.B) {
	for _, mode := range []string{"fsync", "overwrite-fdatasync", "direct-dsync", "nosync"} {
		for _, size := range []int{4 << 10, 20 << 10, 64 << 10, 256 << 10} {
			b.Run(fmt.Sprintf("%s/%dKiB", mode, size>>10), func(b *testing.B) {
				benchDiskSync(b, mode, size)
			})
		}
	}
}

func benchDiskSync(b *testing.B, mode string, size int) {
	dir := b.TempDir()
	buf := alignedBuffer(size)
	for i := range buf {
		buf[i] = byte(i*7 + 1)
	}
	files := 0
	create := func() *os.File {
		files++
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("seg-%d", files)), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
		require.NoError(b, err)
		require.NoError(b, syscall.Fallocate(int(f.Fd()), 0, 0, diskSyncFileBytes))
		return f
	}
	var f *os.File
	switch mode {
	case "fsync", "nosync":
		f = create()
	case "overwrite-fdatasync", "direct-dsync":
		// Write every block once and sync, so that the appends find
		// blocks that exist.
		f = create()
		zeros := make([]byte, diskSyncFileBytes)
		_, err := f.WriteAt(zeros, 0)
		require.NoError(b, err)
		require.NoError(b, f.Sync())
		if mode == "direct-dsync" {
			name := f.Name()
			require.NoError(b, f.Close())
			f, err = os.OpenFile(name, os.O_RDWR|syscall.O_DIRECT|syscall.O_DSYNC, 0)
			require.NoError(b, err)
		}
	default:
		b.Fatalf("unknown mode %q", mode)
	}
	defer func() { _ = f.Close() }()

	off := int64(0)
	cpu0 := procstat.Read().CPU
	b.SetBytes(int64(size))
	b.ResetTimer()
	for range b.N {
		if off+int64(size) > diskSyncFileBytes {
			off = 0
			if mode == "fsync" || mode == "nosync" {
				old := f.Name()
				require.NoError(b, f.Close())
				require.NoError(b, os.Remove(old))
				f = create()
			}
		}
		_, err := f.WriteAt(buf, off)
		require.NoError(b, err)
		off += int64(size)
		switch mode {
		case "fsync":
			err = f.Sync()
		case "overwrite-fdatasync":
			err = syscall.Fdatasync(int(f.Fd()))
		}
		require.NoError(b, err)
	}
	b.StopTimer()
	b.ReportMetric(float64((procstat.Read().CPU-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
}

// alignedBuffer returns n bytes that start on a 4 KiB boundary, as
// O_DIRECT needs.
func alignedBuffer(n int) []byte {
	const align = 4096
	raw := make([]byte, n+align)
	skip := (align - int(uintptr(unsafe.Pointer(&raw[0]))%align)) % align
	return raw[skip : skip+n]
}
