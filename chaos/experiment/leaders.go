package experiment

import (
	"fmt"

	"github.com/batchkv/batchkv/chaos/monitor"
)

// LeaderNow returns shard sh's leader as the monitor sees it after a
// fresh poll, or -1.
func (r *Run) LeaderNow(sh int) int {
	r.Monitor.Poll()
	vs := monitor.Views(r.Monitor.Samples(), sh)
	return monitor.LeaderAt(vs, r.Timeline.Since())
}

// MustLeader returns shard 0's leader, or an error if none is known.
func (r *Run) MustLeader() (int, error) {
	if l := r.LeaderNow(0); l >= 0 {
		return l, nil
	}
	return -1, fmt.Errorf("chaos: shard 0 has no known leader")
}

// Follower returns a replica of shard 0 other than leader l.
func (r *Run) Follower(l int) int { return (max(l, 0) + 1) % r.Opt.Servers }
