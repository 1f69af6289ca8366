// Package diskfull holds the chaos scenario that fills a follower's data
// dir under the load (a tmpfs of its own, mounted by chaos/procs), holds
// it full for the fault's length and frees it: the follower must report
// its disk full, throughput hold, and the follower catch up once space
// returns.
package diskfull

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/batchkv/batchkv/chaos/experiment"
	"github.com/batchkv/batchkv/chaos/monitor"
	"github.com/batchkv/batchkv/chaos/timeline"
	"github.com/batchkv/batchkv/chaos/verdict"
	"github.com/batchkv/batchkv/wire"
)

// Scenarios returns the scenarios of this package by name.
func Scenarios() map[string]experiment.Scenario {
	return map[string]experiment.Scenario{
		"disk-full": {About: "a follower's data dir (a tmpfs) filled below its reserve under the load, freed after the fault",
			Inject: diskFull, SmallDisks: diskSize},
	}
}

// diskSize is the size of the tmpfs mounted on every server's data dir,
// so that one can be filled without filling the machine's disk.
const diskSize = 2 << 30

// leave is how much space the scenario leaves free: below a server's
// 64 MiB reserve (the server is full at once), above the 32 MiB under
// which its log refuses commands, which the load then uses up.
const leave = 60 << 20

// fillDisk fills dir's file system with a filler file until leave bytes
// are free, and returns the filler's name.
func fillDisk(dir string, leave int64) (string, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "", err
	}
	size := int64(st.Bavail)*st.Bsize - leave
	name := filepath.Join(dir, "filler")
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	if size > 0 {
		if err := syscall.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
			return "", fmt.Errorf("chaos: fill %s: %w", dir, err)
		}
	}
	return name, nil
}

// diskFull fills the data dir of a follower of shard 0 (a tmpfs) under
// the load, holds it full for the fault's length, then frees it.
func diskFull(r *experiment.Run) (func(), error) {
	l, err := r.MustLeader()
	if err != nil {
		return nil, err
	}
	f := r.Follower(l)
	filler, err := fillDisk(r.Procs.DataDir(f), leave)
	if err != nil {
		return nil, err
	}
	from := r.Timeline.Event(fmt.Sprintf("server %d's data dir filled (follower; %d MiB left)", f, leave>>20))
	time.Sleep(min(2*time.Second, r.Opt.Fault))
	st, serr := r.Procs.Admin.Status(r.Procs.Addrs[f], wire.StatusRequest{DiskOnly: true}, 2*time.Second)
	time.Sleep(r.Opt.Fault - min(2*time.Second, r.Opt.Fault))
	if err := os.Remove(filler); err != nil {
		return nil, err
	}
	to := r.Timeline.Event(fmt.Sprintf("server %d's data dir freed", f))
	w := timeline.Window{From: from, To: to, Label: "a follower's data dir full"}
	r.Timeline.Window(w.From, w.To, w.Label)
	return func() {
		full := serr == nil && st.Disk != nil && st.Disk.Full
		got := "not full"
		if serr != nil {
			got = serr.Error()
		} else if st.Disk != nil {
			got = fmt.Sprintf("full=%v, %d MiB free", st.Disk.Full, st.Disk.Free>>20)
		}
		r.Check("the filled follower reports its disk full", "full", got, full)
		r.RatioCheck("throughput while a follower's data dir is full", w, 0.70)
		ss := r.Monitor.Samples()
		d, ok := monitor.CaughtUp(ss, monitor.Views(ss, 0), 0, f, to)
		r.Check("the follower is current once space returns", "≤ 10s after the disk is freed", verdict.OrNever(d, ok), ok && d <= 10*time.Second)
	}, nil
}
