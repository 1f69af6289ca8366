package powercut

import (
	"time"

	"golang.org/x/sys/unix"
)

// Fallocate modes the model understands (linux/falloc.h).
const (
	fallocKeepSize  = unix.FALLOC_FL_KEEP_SIZE
	fallocPunchHole = unix.FALLOC_FL_PUNCH_HOLE
	fallocZeroRange = unix.FALLOC_FL_ZERO_RANGE
)

// markDirty records that [off, off+n) changed since the last sync.
func (ino *inode) markDirty(off, n int64) {
	if n <= 0 {
		return
	}
	for p := off / pageSize; p <= (off+n-1)/pageSize; p++ {
		ino.dirty[p] = struct{}{}
	}
}

// write stores data at off in the volatile content.
func (ino *inode) write(data []byte, off int64) (int, error) {
	n, err := ino.vf.WriteAt(data, off)
	ino.markDirty(off, int64(n))
	if end := off + int64(n); end > ino.size {
		ino.size = end
	}
	ino.mtime = time.Now()
	return n, err
}

// read fills dest from the volatile content at off and returns how much
// it read (short at the end of the file).
func (ino *inode) read(dest []byte, off int64) (int, error) {
	if off >= ino.size {
		return 0, nil
	}
	want := min(int64(len(dest)), ino.size-off)
	n, err := ino.vf.ReadAt(dest[:want], off)
	if int64(n) == want {
		err = nil
	}
	return n, err
}

// truncate sets the volatile size.
func (ino *inode) truncate(size int64) error {
	if err := ino.vf.Truncate(size); err != nil {
		return err
	}
	ino.size = size
	ino.minSize = min(ino.minSize, size)
	ino.mtime = time.Now()
	return nil
}

// allocate applies a fallocate call to the volatile content: mode 0 and
// ZERO_RANGE may grow the file, PUNCH_HOLE and ZERO_RANGE zero a range.
func (ino *inode) allocate(off, length int64, mode uint32) error {
	switch mode {
	case 0, fallocKeepSize:
	case fallocPunchHole | fallocKeepSize, fallocZeroRange, fallocZeroRange | fallocKeepSize:
	default:
		return unix.EOPNOTSUPP
	}
	if err := unix.Fallocate(int(ino.vf.Fd()), mode, off, length); err != nil {
		return err
	}
	if mode&(fallocPunchHole|fallocZeroRange) != 0 {
		ino.markDirty(off, min(length, ino.size-off))
	}
	if mode&fallocKeepSize == 0 && off+length > ino.size {
		ino.size = off + length
	}
	ino.mtime = time.Now()
	return nil
}
