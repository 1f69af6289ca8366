// Package monitor polls every server's view of its shards while a chaos
// run goes on (every 200 ms), and reads leaders, terms, elections,
// step-downs, catch-up and snapshot restores off the samples afterwards.
package monitor

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/batchkv/batchkv/chaos/timeline"
	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/wire"
)

// PollEvery is how often the monitor asks every server for its status.
const PollEvery = 200 * time.Millisecond

// Sample is one server's answer to one status poll.
type Sample struct {
	At     time.Duration // since the run's start
	Server int           // the server's index
	OK     bool          // it answered
	Shards []wire.ShardStatus
}

// Monitor polls every server's view of its shards while a run goes on,
// so that leaders, terms, elections and catch-up can be read off later.
type Monitor struct {
	addrs []string
	admin client.Admin
	tl    *timeline.Timeline
	mu    sync.Mutex
	ss    []Sample // guarded by mu
}

// New returns a monitor of the servers at addrs, asked through admin,
// whose samples are timed on tl.
func New(addrs []string, admin client.Admin, tl *timeline.Timeline) *Monitor {
	return &Monitor{addrs: addrs, admin: admin, tl: tl}
}

// Run polls every PollEvery until stop is closed.
func (m *Monitor) Run(stop <-chan struct{}) {
	tick := time.NewTicker(PollEvery)
	defer tick.Stop()
	for {
		m.Poll()
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

// Poll asks every server for its status once, at the same time.
func (m *Monitor) Poll() {
	var wg sync.WaitGroup
	for i, addr := range m.addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := m.admin.Status(addr, wire.StatusRequest{}, 2*PollEvery)
			at := m.tl.Since() // the state is at least this fresh
			m.mu.Lock()
			m.ss = append(m.ss, Sample{At: at, Server: i, OK: err == nil, Shards: st.Shards})
			m.mu.Unlock()
		}()
	}
	wg.Wait()
}

// Samples returns every sample so far, in time order (polls run
// concurrently and finish out of order).
func (m *Monitor) Samples() []Sample {
	m.mu.Lock()
	ss := append([]Sample(nil), m.ss...)
	m.mu.Unlock()
	slices.SortStableFunc(ss, func(a, b Sample) int { return cmp.Compare(a.At, b.At) })
	return ss
}
