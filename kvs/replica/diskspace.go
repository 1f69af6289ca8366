package replica

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/batchkv/batchkv/wire"
)

// Full disks. A server watches the free space of its data dir. Below
// diskReserve it is full: it says so once in its log, in its status and
// its metrics; its replicas stop standing for election, a leader among
// them hands its leadership to a replica that can write, and leaders stop
// handing leadership back to it. Below half the reserve its log stores
// refuse new commands outright (spacelog.go); between the two they still
// take the entries a leader sent before it learned of the full disk, so
// that those commit and the reads behind them are served. Once the free
// space is back above twice the reserve, the server is full no more, and
// its replicas catch up from their leaders by themselves.
//
// Leaders learn whether their peers are full from the peers' Status RPC
// (DiskOnly), every peerDiskEvery. A shard a majority of whose replicas
// are full takes no writes (ErrNoSpace), and serves reads: etcd's NOSPACE
// alarm, per shard.

// diskReserve is the free space under which a server is full: four WAL
// segments. With the standard load writing about 5 MB/s per shard, the
// half of it that stays writable lasts the shards of a server several
// seconds, far longer than its peers take to learn it is full.
const diskReserve = 4 * walSegmentSize

// diskEvery is how often a server reads its data dir's free space, and
// peerDiskEvery how often it asks its peers about theirs.
const (
	diskEvery     = 100 * time.Millisecond
	peerDiskEvery = 250 * time.Millisecond
)

// diskWatch watches the space of this server's data dir and whether its
// peers' are full. A nil *diskWatch (replicas in memory) is never full.
type diskWatch struct {
	dir     string
	reserve uint64
	log     *slog.Logger
	// peerStat asks a peer for its disk (nil: peers are never known full),
	// and peers lists the servers to ask.
	peerStat StatusFunc
	peers    func() []string

	free, total atomic.Uint64
	full        atomic.Bool

	mu       sync.Mutex
	peerFull map[string]bool // guarded by mu
	// somePeerFull says some peer is in peerFull as full.
	somePeerFull atomic.Bool

	stop chan struct{}
	wg   sync.WaitGroup
}

// freeSpace returns the bytes free to an unprivileged user and the size
// of the file system that holds dir.
func freeSpace(dir string) (free, total uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, fmt.Errorf("replica: free space of %s: %w", dir, err)
	}
	return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), nil
}

// startDiskWatch reads dir's free space now and then every diskEvery, and
// asks peers about theirs every peerDiskEvery, until close.
func startDiskWatch(dir string, reserve uint64, log *slog.Logger, peerStat StatusFunc, peers func() []string) (*diskWatch, error) {
	d := &diskWatch{dir: dir, reserve: reserve, log: log, peerStat: peerStat, peers: peers,
		peerFull: map[string]bool{}, stop: make(chan struct{})}
	if err := d.read(); err != nil {
		return nil, err
	}
	d.wg.Add(1)
	go d.watch()
	if peerStat != nil {
		d.wg.Add(1)
		go d.watchPeers()
	}
	return d, nil
}

// read reads the free space once, and notes a change of the full state.
func (d *diskWatch) read() error {
	free, total, err := freeSpace(d.dir)
	if err != nil {
		return err
	}
	d.free.Store(free)
	d.total.Store(total)
	switch full := d.full.Load(); {
	case !full && free < d.reserve:
		d.full.Store(true)
		d.log.Error("data dir full: this server takes no more log entries, stands for no election and hands its leaderships over until space returns",
			"dir", d.dir, "free_bytes", free, "needs_bytes", 2*d.reserve)
	case full && free >= 2*d.reserve:
		d.full.Store(false)
		d.log.Warn("data dir has space again: this server takes log entries and catches up", "dir", d.dir, "free_bytes", free)
	}
	return nil
}

func (d *diskWatch) watch() {
	defer d.wg.Done()
	tick := time.NewTicker(diskEvery)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-d.stop:
			return
		case <-tick.C:
		}
		err := d.read()
		if err != nil && !failing {
			d.log.Error("cannot read the data dir's free space", "err", err)
		}
		failing = err != nil
	}
}

// watchPeers asks each peer for its disk in turn. A peer that does not
// answer is not known full: Raft deals with peers that are gone.
func (d *diskWatch) watchPeers() {
	defer d.wg.Done()
	tick := time.NewTicker(peerDiskEvery)
	defer tick.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-tick.C:
		}
		for _, p := range d.peers() {
			st, err := d.peerStat(p, wire.StatusRequest{DiskOnly: true}, peerDiskEvery)
			full := err == nil && st.Disk != nil && st.Disk.Full
			d.mu.Lock()
			if full != d.peerFull[p] {
				d.log.Info("peer's data dir", "peer", p, "full", full)
			}
			d.peerFull[p] = full
			some := false
			for _, f := range d.peerFull {
				some = some || f
			}
			d.somePeerFull.Store(some)
			d.mu.Unlock()
		}
	}
}

// isFull reports whether this server's data dir is full.
func (d *diskWatch) isFull() bool { return d != nil && d.full.Load() }

// anyFull reports whether this server's or a peer's data dir is full.
func (d *diskWatch) anyFull() bool { return d != nil && (d.full.Load() || d.somePeerFull.Load()) }

// refuses reports whether this server's log stores refuse new commands:
// its free space is below half the reserve.
func (d *diskWatch) refuses() bool { return d != nil && d.full.Load() && d.free.Load() < d.reserve/2 }

// peerIsFull reports whether peer said lately that its data dir is full
// (this server itself: isFull).
func (d *diskWatch) peerIsFull(peer string) bool {
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.peerFull[peer]
}

// stats returns the data dir's space for the Status RPC; nil for
// replicas in memory.
func (d *diskWatch) stats() *wire.DiskStats {
	if d == nil {
		return nil
	}
	return &wire.DiskStats{Dir: d.dir, Free: d.free.Load(), Total: d.total.Load(), Full: d.full.Load(), Reserve: d.reserve}
}

func (d *diskWatch) close() {
	if d == nil {
		return
	}
	close(d.stop)
	d.wg.Wait()
}

// firstLogRoom is the space a shard's new Raft log takes at once: its
// first WAL segment, preallocated, and a little for the WAL's metadata.
const firstLogRoom = walSegmentSize + 1<<20

// roomForLog returns an error, saying what it needs, if dir holds no Raft
// log yet and has no room for a new one.
func roomForLog(dir string) error {
	if had, err := formatOnDisk(dir); err != nil || had != "" {
		return err
	}
	free, _, err := freeSpace(dir)
	if err != nil {
		return err
	}
	if free < firstLogRoom {
		return fmt.Errorf("data dir %s has %d bytes free: a shard's first Raft log segment needs %d (%d MiB)",
			dir, free, uint64(firstLogRoom), firstLogRoom>>20)
	}
	return nil
}

// peers returns the other servers of the cluster under this server's map.
func (s *Set) peers() []string {
	var out []string
	for _, a := range s.Map().Servers {
		if a != s.cfg.Self {
			out = append(out, a)
		}
	}
	return out
}

// Disk returns the space of the data dir; nil when the replicas are in
// memory.
func (s *Set) Disk() *wire.DiskStats { return s.disk.stats() }
