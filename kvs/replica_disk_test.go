package kvs_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/clustertest"
	"github.com/batchkv/batchkv/kvs/replica/leadership"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// diskSize is the tmpfs a full-disk test gives a server: room for its
// shards' first WAL segments and a little more, which the test then fills.
const diskSize = 256 << 20

// writeLoad writes batches of puts over every shard, one at a time, until
// halted, and records when each batch was acknowledged whole, how the
// others were answered, and what each key was last acknowledged as and
// tried with since.
type writeLoad struct {
	mu       sync.Mutex
	okAt     []time.Time
	statuses map[wire.Status]int
	acked    map[string]string   // key: last value acknowledged
	tried    map[string][]string // key: values tried since
	stop     chan struct{}
	done     chan struct{}
}

const writeLoadKeys = 600

func startWrites(t *testing.T, cl *client.Client, prefix string) *writeLoad {
	w := &writeLoad{statuses: map[wire.Status]int{}, acked: map[string]string{}, tried: map[string][]string{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for n := 0; ; n++ {
			select {
			case <-w.stop:
				return
			default:
			}
			ops := make([]wire.Op, 30)
			for j := range ops {
				k := fmt.Sprintf("%s%d", prefix, (n*len(ops)+j)%writeLoadKeys)
				ops[j] = wire.Op{Code: wire.OpPut, Key: k, Value: fmt.Sprintf("%s-%d", k, n)}
			}
			w.mu.Lock()
			for _, op := range ops {
				w.tried[op.Key] = append(w.tried[op.Key], op.Value)
			}
			w.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			res, err := cl.Do(ctx, ops)
			cancel()
			w.mu.Lock()
			ok := err == nil
			for j, r := range res {
				w.statuses[r.Status]++
				ok = ok && r.Status == wire.StatusOK
				if r.Status == wire.StatusOK {
					w.acked[ops[j].Key], w.tried[ops[j].Key] = ops[j].Value, nil
				}
			}
			if ok {
				w.okAt = append(w.okAt, time.Now())
			}
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *writeLoad) halt() {
	close(w.stop)
	<-w.done
}

// maxGap returns the longest time between acknowledged batches in
// [from, to], counting from from and to to.
func (w *writeLoad) maxGap(from, to time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var gap time.Duration
	last := from
	for _, at := range w.okAt {
		if at.Before(from) || at.After(to) {
			continue
		}
		gap = max(gap, at.Sub(last))
		last = at
	}
	return max(gap, to.Sub(last))
}

// checkNoneLost reads every key written and checks that it holds its last
// acknowledged value, or one tried after it.
func (w *writeLoad) checkNoneLost(t *testing.T, cl *client.Client) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	var ops []wire.Op
	for k := range w.acked {
		ops = append(ops, wire.Op{Code: wire.OpGet, Key: k})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cl.Do(ctx, ops)
	require.NoError(t, err)
	for i, r := range res {
		k := ops[i].Key
		require.Equal(t, wire.StatusOK, r.Status, k)
		if r.Value != w.acked[k] {
			require.Contains(t, w.tried[k], r.Value, "key %s: acknowledged %q, reads %q", k, w.acked[k], r.Value)
		}
	}
}

// diskOf returns server i's disk as it reports it.
func (c *replCluster) diskOf(i int) *wire.DiskStats {
	st, err := c.Status(i)
	if err != nil {
		return nil
	}
	return st.Disk
}

// diskMetric returns server i's metric name (of its data dir).
func (c *replCluster) diskMetric(i int, name string) float64 {
	c.t.Helper()
	srv := c.Server(i)
	fams, err := srv.Metrics().Gather()
	require.NoError(c.t, err)
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			if f.GetName() == name && len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == c.Dirs()[i] {
				return m.GetGauge().GetValue()
			}
		}
	}
	c.t.Fatalf("server %d has no %s", i, name)
	return 0
}

// fullReplicaRun is what the client and the cluster did while one
// server's disk was full.
type fullReplicaRun struct {
	maxGap time.Duration // longest time without an acknowledged batch
	// gapAfter is the same from shortly after the hand-over on: what
	// leaders do with a full replica once it leads nothing (the hand-backs
	// the planted bug makes), apart from the hand-over's own pause.
	gapAfter time.Duration
	handOver time.Duration // from the fill until the full server led nothing
	fullLed  bool          // the full server led a shard after handing over
	// handBacks counts the leaders' hand-backs of leadership to the
	// replica they knew full (leadership.HandBacksToFull).
	handBacks int64
	catchUp   time.Duration // from freeing the disk until every replica was equal
	// maxStall is the longest this test process itself was kept from
	// running during the fault (a 5 ms ticker's largest delay): servers
	// and client share it, so no gap can be shorter. go test ./... runs
	// other packages' load tests on the same cores at the same time.
	maxStall time.Duration
}

// stallWatch measures, until stop is called, the longest a 5 ms ticker
// of this process was late: how long the process was kept from running.
func stallWatch() (stop func() time.Duration) {
	const tick = 5 * time.Millisecond
	done, result := make(chan struct{}), make(chan time.Duration, 1)
	go func() {
		var worst time.Duration
		last := time.Now()
		tk := time.NewTicker(tick)
		defer tk.Stop()
		for {
			select {
			case <-done:
				result <- worst
				return
			case now := <-tk.C:
				worst = max(worst, now.Sub(last)-tick)
				last = now
			}
		}
	}()
	return func() time.Duration { close(done); return <-result }
}

// runFullReplica fills the disk of server 2 of three (RF=3, three shards:
// it is the preferred leader of one, and leads it) under a write load for
// faultFor, then frees it, and reports what happened. A leader considers
// handing leadership back every 2 s, once it has led for a tick or more:
// a fault of 5 s sees at least one such decision.
func runFullReplica(t *testing.T, faultFor time.Duration) fullReplicaRun {
	var disk *smallDisk
	c := newReplCluster(t, 3, 3, 3, clustertest.WithPrepareDir(func(i int, dir string) {
		if i == 2 {
			disk = mountSmallDisk(t, dir, diskSize)
		}
	}))
	layout, err := shard.New(c.Addrs(), 3, 3, 0)
	require.NoError(t, err)
	for sh := range 3 {
		c.WaitPreferredLeader(layout, sh)
	}
	require.True(t, c.Leads(2))
	cl := c.Client(t)
	w := startWrites(t, cl, "full")
	time.Sleep(500 * time.Millisecond)

	var run fullReplicaRun
	stalls := stallWatch()
	handBacksBefore := leadership.HandBacksToFull()
	from := time.Now()
	disk.fillTo(16 << 20)
	require.Eventually(t, func() bool { d := c.diskOf(2); return d != nil && d.Full }, 2*time.Second, 20*time.Millisecond,
		"server 2 never reported its disk full")
	require.Eventually(t, func() bool { return !c.Leads(2) }, 5*time.Second, 10*time.Millisecond,
		"the full server kept its leadership")
	run.handOver = time.Since(from)
	require.Equal(t, 1.0, c.diskMetric(2, "batchkv_disk_full"))
	require.Less(t, c.diskMetric(2, "batchkv_disk_free_bytes"), float64(64<<20))
	for end := from.Add(faultFor); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		run.fullLed = run.fullLed || c.Leads(2)
	}
	run.maxGap = w.maxGap(from, time.Now())
	run.gapAfter = w.maxGap(from.Add(run.handOver+handOverSettles), time.Now())
	run.maxStall = stalls()
	run.handBacks = leadership.HandBacksToFull() - handBacksBefore

	disk.emptyFiller()
	freed := time.Now()
	require.Eventually(t, func() bool { d := c.diskOf(2); return d != nil && !d.Full }, 2*time.Second, 20*time.Millisecond)
	require.Equal(t, 0.0, c.diskMetric(2, "batchkv_disk_full"))
	w.halt()
	c.WaitCaughtUp(30 * time.Second)
	run.catchUp = time.Since(freed)
	w.checkNoneLost(t, cl)
	t.Logf("one follower full for %v: longest time without an acknowledged batch %v (%v after the hand-over; this process stalled for up to %v), leadership handed over after %v (handed back while full: %d times, led again: %v), caught up %v after the disk was freed; statuses %v",
		faultFor, run.maxGap, run.gapAfter, run.maxStall, run.handOver, run.handBacks, run.fullLed, run.catchUp, w.statuses)
	return run
}

// maxFullGap is the longest a client may go without an acknowledged
// batch while one replica's disk is full, once the hand-over has settled.
// Alone, the longest such gap is 13-20 ms; under go test ./... on 2 cores
// it reached 615 ms in CI. Leadership handed back to the full replica
// (the planted bug below) pauses writes for 1.02-1.03 s even alone: the
// full leader's failed appends and the hand-over away again.
const maxFullGap = 850 * time.Millisecond

// maxHandOverGap bounds the pause of the hand-over itself: the failover
// target (a new leader serving within 1.5 s). On a machine busy with
// other tests the hand-over's pause has reached 0.8-0.9 s.
const maxHandOverGap = 1500 * time.Millisecond

// handOverSettles is how long after the full replica led nothing the
// client may still be finding the new leaders.
const handOverSettles = 300 * time.Millisecond

// TestReplicatedDiskFullFollower: a server's data dir (a real tmpfs)
// fills under a write load. It reports its disk full, hands over the
// leadership it holds at once, is never handed leadership back while full,
// and the client's writes keep being acknowledged with no pause; once
// the disk is freed the replica catches up by itself (equal digests), and
// no acknowledged write is lost.
func TestReplicatedDiskFullFollower(t *testing.T) {
	run := runFullReplica(t, 5*time.Second)
	require.Less(t, run.handOver, time.Second)
	require.False(t, run.fullLed, "the full server was handed leadership")
	require.Zero(t, run.handBacks, "leaders handed leadership back to the full server")
	// A stall of the whole process (the machine busy with other tests)
	// delays every batch alike; the bound is on what the cluster adds.
	require.Less(t, run.maxGap, maxHandOverGap+run.maxStall)
	require.Less(t, run.gapAfter, maxFullGap+run.maxStall)
}

// TestReplicatedDiskFullCheckCatchesHandBackToFull plants the bug issue
// 36 found: leaders hand leadership back to a preferred replica whose
// disk is full. The checks of TestReplicatedDiskFullFollower must fail.
func TestReplicatedDiskFullCheckCatchesHandBackToFull(t *testing.T) {
	leadership.SetHandBackToFullForTest(true)
	defer leadership.SetHandBackToFullForTest(false)
	run := runFullReplica(t, 5*time.Second)
	require.True(t, run.fullLed || run.handBacks > 0 || run.gapAfter >= maxFullGap+run.maxStall,
		"the planted hand-back to a full replica went unnoticed: longest gap after the hand-over %v", run.gapAfter)
}

// TestReplicatedDiskFullMajority: the data dirs of two servers of three
// fill. Writes then fail fast with StatusNoSpace, reads are served, and
// once space returns writes succeed again, every replica catches up, and
// no acknowledged write is lost.
func TestReplicatedDiskFullMajority(t *testing.T) {
	disks := map[int]*smallDisk{}
	c := newReplCluster(t, 3, 3, 3, clustertest.WithPrepareDir(func(i int, dir string) {
		if i > 0 {
			disks[i] = mountSmallDisk(t, dir, diskSize)
		}
	}))
	cl := c.Client(t)
	w := startWrites(t, cl, "maj")
	time.Sleep(time.Second)
	// Below the reserve, above the half of it where the log stores
	// refuse commands: the leaders learn of the full disks before the
	// entries they have sent are refused.
	for _, d := range disks {
		d.fillTo(48 << 20)
	}
	for i := range disks {
		require.Eventually(t, func() bool { d := c.diskOf(i); return d != nil && d.Full }, 2*time.Second, 20*time.Millisecond)
	}
	// Writes fail fast with StatusNoSpace.
	require.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.statuses[wire.StatusNoSpace] > 0
	}, 5*time.Second, 20*time.Millisecond, "no write was refused for want of space")
	w.halt()
	// Each shard's leader learns of the full disks on its own poll, so a
	// write to another shard may still be taken (by replicas above the
	// half of the reserve) for a moment.
	ops := []wire.Op{{Code: wire.OpPut, Key: "nospace", Value: "x"}}
	require.Eventually(t, func() bool {
		res, err := cl.Do(context.Background(), ops)
		return err == nil && res[0].Status == wire.StatusNoSpace
	}, 5*time.Second, 20*time.Millisecond, "a write to the shard of \"nospace\" was never refused for want of space")
	for range 5 {
		start := time.Now()
		res, err := cl.Do(context.Background(), ops)
		require.NoError(t, err)
		require.Equal(t, wire.StatusNoSpace, res[0].Status)
		require.Less(t, time.Since(start), 500*time.Millisecond, "a write to a shard without space took long to fail")
	}
	// Reads are served.
	w.checkNoneLost(t, cl)

	for _, d := range disks {
		d.emptyFiller()
	}
	require.Eventually(t, func() bool {
		res, err := cl.Do(context.Background(), ops)
		return err == nil && res[0].Status == wire.StatusOK
	}, 10*time.Second, 50*time.Millisecond, "writes never succeeded again once space returned")
	c.WaitCaughtUp(30 * time.Second)
	w.checkNoneLost(t, cl)
	t.Logf("majority full: statuses %v", w.statuses)
}
