package raftstore

import "golang.org/x/sys/unix"

// startWriteback asks the kernel to start writing f's dirty pages to disk
// now, without waiting for them.
func startWriteback(fd int) error {
	return unix.SyncFileRange(fd, 0, 0, unix.SYNC_FILE_RANGE_WRITE)
}
