package load

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/linz"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// Probe writes keys of a shard, one every 10ms, each write recorded in the
// history, and remembers when each was called and acknowledged, to time
// failovers: the first write called after a fault that succeeds.
type Probe struct {
	// Keys are the keys it writes, in turn: probeKeys of them, so that
	// its writes, which overlap when a leader holds them, seldom overlap
	// on one key. Porcupine checks a key whose writes overlap by the
	// hundred in time exponential in their number: with one key, the
	// check of a partition run's history ran past its 5 minutes.
	Keys []string
	Acks AckLog
}

// probeKeys is how many keys a probe writes in turn.
const probeKeys = 64

// AckLog remembers when acknowledged writes were called and answered.
// It is safe for concurrent use.
type AckLog struct {
	mu   sync.Mutex
	acks []ack // guarded by mu
}

// ack is one acknowledged write: when it was called and answered.
type ack struct{ call, ret time.Duration }

// add records a write called at call and acknowledged at ret (the
// history's times).
func (l *AckLog) add(call, ret int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acks = append(l.acks, ack{call: time.Duration(call), ret: time.Duration(ret)})
}

// FirstAckAfter returns how long after t the first write called at or
// after t was acknowledged, or false if none was.
func (l *AckLog) FirstAckAfter(t time.Duration) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var first time.Duration
	found := false
	for _, a := range l.acks {
		if a.call >= t && (!found || a.ret < first) {
			first, found = a.ret, true
		}
	}
	return first - t, found
}

// LastAckIn returns the last time in [from, to) a write called at or
// after calledFrom was acknowledged, or false if none was.
func (l *AckLog) LastAckIn(calledFrom, from, to time.Duration) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var last time.Duration
	found := false
	for _, a := range l.acks {
		if a.call >= calledFrom && a.ret >= from && a.ret < to {
			last, found = a.ret, true
		}
	}
	return last, found
}

// NewProbe returns a probe of keys of shard sh.
func NewProbe(layout *shard.Layout, sh int) *Probe {
	p := &Probe{}
	for i := 0; len(p.Keys) < probeKeys; i++ {
		if k := fmt.Sprintf("probe%d", i); layout.Shard(k) == sh {
			p.Keys = append(p.Keys, k)
		}
	}
	return p
}

// probeInFlight bounds the probe's writes in flight: 2 s of them.
const probeInFlight = 200

// Run writes the probe's keys through cl, one every 10 ms, until stop is
// closed, each write on its own: a write held by a failing leader does
// not hold back the next ones. A failover is then timed from the fault to
// the first write called after it that is acknowledged. Written one after
// another, as they were, the first write called after the fault waited
// for the one in flight when it came, and the time measured grew by one
// write's latency (0.4-0.7 s under the chaos load; a one-way partition
// timed at 2.616 s had its write in flight acknowledged at 1.97 s).
func (p *Probe) Run(cl *client.Client, h *linz.History, stop <-chan struct{}) {
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, probeInFlight)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		select {
		case slots <- struct{}{}:
		default:
			continue // as many in flight as allowed: this tick writes nothing
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			p.write(cl, h, n)
		}()
	}
}

// write makes the probe's n-th write, to one of its keys, and records it.
func (p *Probe) write(cl *client.Client, h *linz.History, n int) {
	ops := []wire.Op{{Code: wire.OpPut, Key: p.Keys[n%len(p.Keys)], Value: fmt.Sprintf("probe-%d", n)}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	call := h.Now()
	res, err := cl.Do(ctx, ops)
	ret := h.Now()
	h.Record(ProbeClient, ops, res, err, call, ret)
	if err == nil && res[0].Status.Applied() {
		p.Acks.add(call, ret)
	}
}
