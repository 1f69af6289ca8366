package powercut

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Create makes a file, or opens the existing one, in the volatile entries.
func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if e := n.lock(); e != 0 {
		return nil, nil, 0, e
	}
	defer n.unlock()
	if c, ok := n.ino.live[name]; ok {
		if flags&syscall.O_EXCL != 0 {
			return nil, nil, 0, syscall.EEXIST
		}
		if c.dir {
			return nil, nil, 0, syscall.EISDIR
		}
		if flags&syscall.O_TRUNC != 0 {
			if err := c.truncate(0); err != nil {
				return nil, nil, 0, errno(err)
			}
		}
		return n.child(ctx, c, out), nil, 0, 0
	}
	c, err := n.pfs.m.newFile(mode & 0o7777)
	if err != nil {
		return nil, nil, 0, errno(err)
	}
	n.ino.live[name] = c
	return n.child(ctx, c, out), nil, 0, 0
}

// Mkdir makes a directory in the volatile entries.
func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if e := n.lock(); e != 0 {
		return nil, e
	}
	defer n.unlock()
	if _, ok := n.ino.live[name]; ok {
		return nil, syscall.EEXIST
	}
	c := n.pfs.m.newDir(mode & 0o7777)
	n.ino.live[name] = c
	return n.child(ctx, c, out), 0
}

// Unlink removes a file's volatile entry.
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	if e := n.lock(); e != 0 {
		return e
	}
	defer n.unlock()
	c, ok := n.ino.live[name]
	if !ok {
		return syscall.ENOENT
	}
	if c.dir {
		return syscall.EISDIR
	}
	delete(n.ino.live, name)
	return 0
}

// Rmdir removes an empty directory's volatile entry.
func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	if e := n.lock(); e != 0 {
		return e
	}
	defer n.unlock()
	c, ok := n.ino.live[name]
	if !ok {
		return syscall.ENOENT
	}
	if !c.dir {
		return syscall.ENOTDIR
	}
	if len(c.live) > 0 {
		return syscall.ENOTEMPTY
	}
	delete(n.ino.live, name)
	return 0
}

// Rename moves a volatile entry (flags: RENAME_NOREPLACE, RENAME_EXCHANGE).
func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if e := n.lock(); e != 0 {
		return e
	}
	defer n.unlock()
	np, ok := newParent.(*node)
	if !ok || np.gen != n.gen {
		return syscall.EXDEV
	}
	src, ok := n.ino.live[name]
	if !ok {
		return syscall.ENOENT
	}
	dst, exists := np.ino.live[newName]
	switch {
	case flags&unix.RENAME_EXCHANGE != 0:
		if !exists {
			return syscall.ENOENT
		}
		n.ino.live[name], np.ino.live[newName] = dst, src
		return 0
	case flags&^uint32(unix.RENAME_NOREPLACE) != 0:
		return syscall.EINVAL
	case exists && flags&unix.RENAME_NOREPLACE != 0:
		return syscall.EEXIST
	case exists && dst.dir && !src.dir:
		return syscall.EISDIR
	case exists && !dst.dir && src.dir:
		return syscall.ENOTDIR
	case exists && dst.dir && len(dst.live) > 0:
		return syscall.ENOTEMPTY
	}
	delete(n.ino.live, name)
	np.ino.live[newName] = src
	return 0
}

// Open opens a file without a handle (reads and writes go to the node);
// O_TRUNC empties it.
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if e := n.lock(); e != 0 {
		return nil, 0, e
	}
	defer n.unlock()
	if flags&syscall.O_TRUNC != 0 && !n.ino.dir {
		if err := n.ino.truncate(0); err != nil {
			return nil, 0, errno(err)
		}
	}
	return nil, 0, 0
}

// Read serves the volatile content.
func (n *node) Read(ctx context.Context, f fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if e := n.lock(); e != 0 {
		return nil, e
	}
	defer n.unlock()
	got, err := n.ino.read(dest, off)
	if err != nil {
		return nil, errno(err)
	}
	return fuse.ReadResultData(dest[:got]), 0
}

// Write changes the volatile content.
func (n *node) Write(ctx context.Context, f fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	if e := n.lock(); e != 0 {
		return 0, e
	}
	defer n.unlock()
	got, err := n.ino.write(data, off)
	return uint32(got), errno(err)
}

// Allocate applies fallocate to the volatile content.
func (n *node) Allocate(ctx context.Context, f fs.FileHandle, off, size uint64, mode uint32) syscall.Errno {
	if e := n.lock(); e != 0 {
		return e
	}
	defer n.unlock()
	return errno(n.ino.allocate(int64(off), int64(size), mode))
}

// Fsync answers fsync and fdatasync of a file (its content becomes
// durable) and fsync of a directory (its entries become durable).
func (n *node) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	if e := n.lock(); e != 0 {
		return e
	}
	defer n.unlock()
	n.pfs.fsyncs++
	if n.ino.dir {
		if n.pfs.m.bugs.fsyncDirENOSYS {
			return syscall.ENOSYS
		}
		n.pfs.m.syncDir(n.ino)
		return 0
	}
	return errno(n.pfs.m.syncFile(n.ino))
}

// Flush (on every close) makes nothing durable.
func (n *node) Flush(ctx context.Context, f fs.FileHandle) syscall.Errno { return 0 }

// Release (the last close) makes nothing durable.
func (n *node) Release(ctx context.Context, f fs.FileHandle) syscall.Errno { return 0 }
