package powercut

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// node is the go-fuse face of one inode of the model for one mount (one
// power-on period): after a cut its operations fail with EIO.
type node struct {
	fs.Inode
	pfs *FS
	ino *inode
	gen uint64
}

var (
	_ fs.NodeLookuper   = (*node)(nil)
	_ fs.NodeGetattrer  = (*node)(nil)
	_ fs.NodeSetattrer  = (*node)(nil)
	_ fs.NodeReaddirer  = (*node)(nil)
	_ fs.NodeCreater    = (*node)(nil)
	_ fs.NodeMkdirer    = (*node)(nil)
	_ fs.NodeUnlinker   = (*node)(nil)
	_ fs.NodeRmdirer    = (*node)(nil)
	_ fs.NodeRenamer    = (*node)(nil)
	_ fs.NodeOpener     = (*node)(nil)
	_ fs.NodeReader     = (*node)(nil)
	_ fs.NodeWriter     = (*node)(nil)
	_ fs.NodeFsyncer    = (*node)(nil)
	_ fs.NodeFlusher    = (*node)(nil)
	_ fs.NodeAllocater  = (*node)(nil)
	_ fs.NodeStatfser   = (*node)(nil)
	_ fs.NodeOpendirer  = (*node)(nil)
	_ fs.NodeReleaser   = (*node)(nil)
	_ fs.NodeAccesser   = (*node)(nil)
	_ fs.NodeLinker     = (*node)(nil)
	_ fs.NodeSymlinker  = (*node)(nil)
	_ fs.NodeMknoder    = (*node)(nil)
	_ fs.NodeGetxattrer = (*node)(nil)
)

// lock takes the model's lock and reports EIO when the power was cut since
// this node's mount.
func (n *node) lock() syscall.Errno {
	n.pfs.mu.Lock()
	if n.gen != n.pfs.gen {
		n.pfs.mu.Unlock()
		return syscall.EIO
	}
	return 0
}

func (n *node) unlock() { n.pfs.mu.Unlock() }

func (n *node) fillAttr(ino *inode, out *fuse.Attr) {
	out.Ino = ino.id
	out.Mode = ino.perm
	out.Nlink = 1
	if ino.dir {
		out.Mode |= syscall.S_IFDIR
		out.Nlink = 2
	} else {
		out.Mode |= syscall.S_IFREG
		out.Size = uint64(ino.size)
		if n.pfs.m.bugs.appendAtDurableSize {
			if st, err := ino.df.Stat(); err == nil {
				out.Size = uint64(st.Size())
			}
		}
		out.Blocks = (out.Size + 511) / 512
	}
	out.Blksize = pageSize
	out.SetTimes(&ino.mtime, &ino.mtime, &ino.mtime)
}

func (n *node) child(ctx context.Context, ino *inode, out *fuse.EntryOut) *fs.Inode {
	n.fillAttr(ino, &out.Attr)
	mode := uint32(syscall.S_IFREG)
	if ino.dir {
		mode = syscall.S_IFDIR
	}
	return n.NewInode(ctx, &node{pfs: n.pfs, ino: ino, gen: n.gen}, fs.StableAttr{Mode: mode, Ino: ino.id})
}

// Lookup finds name among the directory's volatile entries.
func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if e := n.lock(); e != 0 {
		return nil, e
	}
	defer n.unlock()
	c, ok := n.ino.live[name]
	if !ok {
		return nil, syscall.ENOENT
	}
	return n.child(ctx, c, out), 0
}

// Getattr reports the volatile size, so that O_APPEND writes land at the
// end the caller sees.
func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if e := n.lock(); e != 0 {
		return e
	}
	defer n.unlock()
	n.fillAttr(n.ino, &out.Attr)
	return 0
}

// Setattr applies truncate, chmod and utimes; ownership changes are ignored.
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if e := n.lock(); e != 0 {
		return e
	}
	defer n.unlock()
	if size, ok := in.GetSize(); ok {
		if n.ino.dir {
			return syscall.EISDIR
		}
		if err := n.ino.truncate(int64(size)); err != nil {
			return errno(err)
		}
	}
	if mode, ok := in.GetMode(); ok {
		n.ino.perm = mode & 0o7777
	}
	if mtime, ok := in.GetMTime(); ok {
		n.ino.mtime = mtime
	}
	n.fillAttr(n.ino, &out.Attr)
	return 0
}

// Opendir lets every directory be opened.
func (n *node) Opendir(ctx context.Context) syscall.Errno {
	if e := n.lock(); e != 0 {
		return e
	}
	n.unlock()
	return 0
}

// Access grants everything: the callers are root.
func (n *node) Access(ctx context.Context, mask uint32) syscall.Errno { return 0 }

// Readdir lists the directory's volatile entries.
func (n *node) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	if e := n.lock(); e != 0 {
		return nil, e
	}
	defer n.unlock()
	list := make([]fuse.DirEntry, 0, len(n.ino.live))
	for name, c := range n.ino.live {
		mode := uint32(syscall.S_IFREG)
		if c.dir {
			mode = syscall.S_IFDIR
		}
		list = append(list, fuse.DirEntry{Name: name, Mode: mode, Ino: c.id})
	}
	return fs.NewListDirStream(list), 0
}

// Statfs reports the backing directory's filesystem.
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	var st syscall.Statfs_t
	if err := syscall.Statfs(n.pfs.backing, &st); err != nil {
		return errno(err)
	}
	out.FromStatfsT(&st)
	return 0
}

// Link is not supported: the model gives each inode one name.
func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.ENOTSUP
}

// Symlink is not supported.
func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.ENOTSUP
}

// Mknod is not supported (regular files come from Create).
func (n *node) Mknod(ctx context.Context, name string, mode, dev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.ENOTSUP
}

// Getxattr reports that no attribute exists.
func (n *node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENODATA
}
