package powercut

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

// pageSize is the granularity of the dirty-page tracking: a write marks the
// pages it touches, and a file's fsync copies those pages to its durable
// content.
const pageSize = 4096

// inode is one file or directory of the model. Every field is guarded by
// the owning FS's mu.
type inode struct {
	id    uint64
	dir   bool
	perm  uint32
	mtime time.Time

	// Directories: the entries readers see, and those the last fsync of the
	// directory saved.
	live    map[string]*inode
	durable map[string]*inode

	// Files: vf holds the volatile content, df the durable one. size is
	// the volatile size, minSize the smallest volatile size since the last
	// sync (the durable content is cut there before the dirty pages are
	// copied), dirty the pages written since the last sync.
	vf, df  *os.File
	size    int64
	minSize int64
	dirty   map[int64]struct{}
}

// model is the state behind a mount: every inode, and the durable tree
// that a cut goes back to. Not safe for concurrent use: FS guards it.
type model struct {
	backing string // directory holding each file's two contents
	mode    Mode
	bugs    bugs
	root    *inode
	inodes  map[uint64]*inode
	nextID  uint64
}

func newModel(backing string, mode Mode) *model {
	m := &model{backing: backing, mode: mode, inodes: map[uint64]*inode{}, nextID: 1}
	m.root = m.newDir(0o755)
	return m
}

func (m *model) newDir(perm uint32) *inode {
	ino := &inode{id: m.nextID, dir: true, perm: perm, mtime: time.Now(),
		live: map[string]*inode{}, durable: map[string]*inode{}}
	m.nextID++
	m.inodes[ino.id] = ino
	return ino
}

func (m *model) newFile(perm uint32) (*inode, error) {
	ino := &inode{id: m.nextID, perm: perm, mtime: time.Now(), dirty: map[int64]struct{}{}}
	m.nextID++
	var err error
	if ino.vf, err = os.OpenFile(m.contentPath(ino, "v"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600); err != nil {
		return nil, err
	}
	if ino.df, err = os.OpenFile(m.contentPath(ino, "d"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600); err != nil {
		_ = ino.vf.Close()
		return nil, err
	}
	m.inodes[ino.id] = ino
	return ino, nil
}

func (m *model) contentPath(ino *inode, kind string) string {
	return filepath.Join(m.backing, fmt.Sprintf("%d.%s", ino.id, kind))
}

// syncFile saves a file's volatile content as its durable content (fsync
// and fdatasync both do this: the data and the size needed to read it). In
// Ext4 mode it also saves the file's directory entry and those of its new
// ancestors.
func (m *model) syncFile(ino *inode) error {
	if !m.bugs.fsyncKeepsNoData {
		if err := ino.df.Truncate(ino.minSize); err != nil {
			return err
		}
		if err := ino.df.Truncate(ino.size); err != nil {
			return err
		}
		pages := make([]int64, 0, len(ino.dirty))
		for p := range ino.dirty {
			pages = append(pages, p)
		}
		sort.Slice(pages, func(i, j int) bool { return pages[i] < pages[j] })
		buf := make([]byte, pageSize)
		for _, p := range pages {
			off := p * pageSize
			n := min(int64(pageSize), ino.size-off)
			if n <= 0 {
				continue
			}
			if _, err := ino.vf.ReadAt(buf[:n], off); err != nil && err != io.EOF {
				return err
			}
			if _, err := ino.df.WriteAt(buf[:n], off); err != nil {
				return err
			}
		}
		clear(ino.dirty)
		ino.minSize = ino.size
	}
	if m.mode == Ext4 {
		m.persistEntry(ino)
	}
	return nil
}

// syncDir saves a directory's volatile entries as its durable ones.
func (m *model) syncDir(ino *inode) {
	if m.bugs.fsyncDirKeepsNothing {
		return
	}
	ino.durable = make(map[string]*inode, len(ino.live))
	for name, child := range ino.live {
		ino.durable[name] = child
	}
}

// persistEntry saves every volatile entry that names target, and (as ext4
// does for new inodes) the entries of its parents while they are not
// durable themselves.
func (m *model) persistEntry(target *inode) {
	if target == m.root {
		return
	}
	for _, d := range m.inodes {
		if !d.dir {
			continue
		}
		for name, child := range d.live {
			if child != target {
				continue
			}
			d.durable[name] = target
			if !m.durablyReachable(d) {
				m.persistEntry(d)
			}
		}
	}
}

// durablyReachable reports whether the durable tree reaches target.
func (m *model) durablyReachable(target *inode) bool {
	return m.reachable()[target]
}

// reachable returns the inodes the durable tree reaches from the root.
func (m *model) reachable() map[*inode]bool {
	seen := map[*inode]bool{m.root: true}
	stack := []*inode{m.root}
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, child := range d.durable {
			if !seen[child] {
				seen[child] = true
				if child.dir {
					stack = append(stack, child)
				}
			}
		}
	}
	return seen
}

// CutReport says what a cut threw away.
type CutReport struct {
	// LostEntries counts directory entries whose volatile state differed
	// from the durable one (created, removed or renamed, and not synced).
	LostEntries int
	// LostPages counts the unsynced dirty pages of the files that survive.
	LostPages int
	// ResizedFiles counts surviving files whose volatile size differed from
	// the durable one.
	ResizedFiles int
	// GoneInodes counts files and directories no durable entry reaches.
	GoneInodes int
}

func (r CutReport) String() string {
	return fmt.Sprintf("lost entries=%d pages=%d resized=%d gone=%d",
		r.LostEntries, r.LostPages, r.ResizedFiles, r.GoneInodes)
}

// cut turns every inode back to its durable state and forgets the inodes
// that the durable tree no longer reaches.
func (m *model) cut() (CutReport, error) {
	var rep CutReport
	keep := m.reachable()
	for _, ino := range m.inodes {
		if !keep[ino] {
			rep.GoneInodes++
			if !ino.dir {
				_ = ino.vf.Close()
				_ = ino.df.Close()
				_ = os.Remove(m.contentPath(ino, "v"))
				_ = os.Remove(m.contentPath(ino, "d"))
			}
			delete(m.inodes, ino.id)
			continue
		}
		if ino.dir {
			rep.LostEntries += entryDiff(ino.live, ino.durable)
			if m.bugs.cutKeepsEntries {
				continue
			}
			ino.live = make(map[string]*inode, len(ino.durable))
			for name, child := range ino.durable {
				ino.live[name] = child
			}
			continue
		}
		if err := m.cutFile(ino, &rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

func (m *model) cutFile(ino *inode, rep *CutReport) error {
	rep.LostPages += len(ino.dirty)
	st, err := ino.df.Stat()
	if err != nil {
		return err
	}
	if st.Size() != ino.size {
		rep.ResizedFiles++
	}
	if m.bugs.cutKeepsData {
		return nil
	}
	if err := ino.vf.Truncate(0); err != nil {
		return err
	}
	if _, err := ino.df.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if _, err := ino.vf.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if _, err := io.Copy(ino.vf, ino.df); err != nil {
		return err
	}
	ino.size, ino.minSize = st.Size(), st.Size()
	clear(ino.dirty)
	return nil
}

func entryDiff(live, durable map[string]*inode) int {
	n := 0
	for name, child := range live {
		if durable[name] != child {
			n++
		}
	}
	for name := range durable {
		if _, ok := live[name]; !ok {
			n++
		}
	}
	return n
}

// close releases every content file.
func (m *model) close() {
	for _, ino := range m.inodes {
		if !ino.dir {
			_ = ino.vf.Close()
			_ = ino.df.Close()
		}
	}
}

// errno maps an I/O error of the backing files to the errno the caller sees.
func errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return syscall.EIO
}
