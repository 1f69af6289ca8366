package diskspace

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
// the reserve (Config.Reserve) it is full: it says so once in its log, in its status and
// its metrics; its replicas stop standing for election, a leader among
// them hands its leadership to a replica that can write, and leaders stop
// handing leadership back to it. Below half the reserve its log stores
// refuse new commands outright (Refuses); between the two they
// still take the entries a leader sent before it learned of the full disk, so
// that those commit and the reads behind them are served. Once the free
// space is back above twice the reserve, the server is full no more, and
// its replicas catch up from their leaders by themselves.
//
// Leaders learn whether their peers are full from the peers' Status RPC
// (DiskOnly), every PeerEvery. A shard a majority of whose replicas
// are full takes no writes (replica.ErrNoSpace), and serves reads: etcd's NOSPACE
// alarm, per shard.

// Watch watches the space of this server's data dir and whether its
// peers' are full. A nil *Watch (replicas in memory) is never full. Its
// methods are safe for concurrent use.
type Watch struct {
	dir     string
	reserve uint64
	log     *slog.Logger
	// peerStat asks a peer for its disk (nil: peers are never known full),
	// and peers lists the servers to ask.
	peerStat PeerStatusFunc
	peers    func() []string

	free, total atomic.Uint64
	full        atomic.Bool

	mu       sync.Mutex
	peerFull map[string]bool // guarded by mu
	// peerStores is what each peer said last of its stores (stores.go);
	// guarded by mu.
	peerStores map[string]peerStores
	// somePeerStoresNear says some peer is in peerStores as near, so
	// that a leader's check of each batch takes no lock otherwise.
	somePeerStoresNear atomic.Bool
	// somePeerFull says some peer is in peerFull as full.
	somePeerFull atomic.Bool

	stop chan struct{}
	wg   sync.WaitGroup
}

// Free returns the bytes free to an unprivileged user and the size
// of the file system that holds dir.
func Free(dir string) (free, total uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, fmt.Errorf("replica: free space of %s: %w", dir, err)
	}
	return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), nil
}

// Start reads cfg.Dir's free space now and then every Every, and asks
// the peers about theirs every PeerEvery, until Close.
func Start(cfg Config) (*Watch, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	d := &Watch{dir: cfg.Dir, reserve: cfg.Reserve, log: cfg.Logger, peerStat: cfg.PeerStatus, peers: cfg.Peers,
		peerFull: map[string]bool{}, peerStores: map[string]peerStores{}, stop: make(chan struct{})}
	if err := d.read(); err != nil {
		return nil, err
	}
	d.wg.Add(1)
	go d.watch()
	if d.peerStat != nil {
		d.wg.Add(1)
		go d.watchPeers()
	}
	return d, nil
}

// read reads the free space once, and notes a change of the full state.
func (d *Watch) read() error {
	free, total, err := Free(d.dir)
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

// watch reads the free space every Every until Close.
func (d *Watch) watch() {
	defer d.wg.Done()
	tick := time.NewTicker(Every)
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

// watchPeers asks each peer for its disk in turn. A peer never heard from
// is not known full (Raft deals with peers that are gone); a peer that
// does not answer one poll keeps what it said last: under load an answer
// can miss the poll's deadline, and forgetting that a full peer is full
// let leaders hand it their leadership, each try holding the shard's
// writes for about a second.
func (d *Watch) watchPeers() {
	defer d.wg.Done()
	tick := time.NewTicker(PeerEvery)
	defer tick.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-tick.C:
		}
		peers := d.peers()
		d.forgetPeerStores(peers)
		for _, p := range peers {
			st, err := d.peerStat(p, wire.StatusRequest{DiskOnly: true}, PeerEvery)
			if err != nil {
				continue
			}
			full := st.Disk != nil && st.Disk.Full
			d.notePeerStores(p, st.Stores, time.Now())
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

// IsFull reports whether this server's data dir is full.
func (d *Watch) IsFull() bool { return d != nil && d.full.Load() }

// AnyFull reports whether this server's or a peer's data dir is full.
func (d *Watch) AnyFull() bool { return d != nil && (d.full.Load() || d.somePeerFull.Load()) }

// Refuses reports whether this server's log stores refuse new commands:
// its free space is below half the reserve.
func (d *Watch) Refuses() bool { return d != nil && d.full.Load() && d.free.Load() < d.reserve/2 }

// PeerIsFull reports whether peer said lately that its data dir is full
// (this server itself: IsFull).
func (d *Watch) PeerIsFull(peer string) bool {
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.peerFull[peer]
}

// Stats returns the data dir's space for the Status RPC; nil for
// replicas in memory.
func (d *Watch) Stats() *wire.DiskStats {
	if d == nil {
		return nil
	}
	return &wire.DiskStats{Dir: d.dir, Free: d.free.Load(), Total: d.total.Load(), Full: d.full.Load(), Reserve: d.reserve}
}

// Dir returns the data dir the watch reads.
func (d *Watch) Dir() string { return d.dir }

// Close stops the watch and waits for it; a nil *Watch does nothing.
func (d *Watch) Close() {
	if d == nil {
		return
	}
	close(d.stop)
	d.wg.Wait()
}
