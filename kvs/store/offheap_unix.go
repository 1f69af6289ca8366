//go:build unix

package store

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// mapMemory maps n bytes of zeroed, private memory. Running out of address
// space or memory is as fatal here as it is to the Go heap.
func mapMemory(n int) []byte {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		panic(fmt.Sprintf("store: mapping %d bytes: %v", n, err))
	}
	return b
}

// dropPages gives b's pages back to the kernel; b reads as zeros after.
func dropPages(b []byte) {
	_ = unix.Madvise(b, unix.MADV_DONTNEED) // on failure the pages stay resident: only memory is lost
}
