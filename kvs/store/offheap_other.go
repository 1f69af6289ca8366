//go:build !unix

package store

// mapMemory allocates n bytes on the heap where the system has no mmap.
func mapMemory(n int) []byte { return make([]byte, n) }

// dropPages zeroes b, as dropping its pages does on unix.
func dropPages(b []byte) { clear(b) }
