package moves

import (
	"fmt"
	"time"

	"github.com/batchkv/batchkv/chaos/experiment"
	"github.com/batchkv/batchkv/chaos/timeline"
	"github.com/batchkv/batchkv/membership"
)

// replaceDead kills server 0 with SIGKILL for good, lets its shards elect
// new leaders, then replaces it with the spare (membership's
// ReplaceServer), all under the loads.
func replaceDead(r *experiment.Run) (func(), error) {
	drv := r.Driver()
	before, err := drv.Map()
	if err != nil {
		return nil, err
	}
	dead := r.Procs.Addrs[0]
	r.Timeline.Event("kill -9 server 0, for good")
	if err := r.Procs.Kill(0); err != nil {
		return nil, err
	}
	// Healing restarts a dead server unless it is retired.
	if err := r.Procs.Retire(0); err != nil {
		return nil, err
	}
	time.Sleep(min(r.Opt.Fault, 5*time.Second))
	spare, err := r.StartSpare()
	if err != nil {
		return nil, err
	}
	from := r.Timeline.Event(fmt.Sprintf("replace-server 0 %d", spare))
	replaced, err := drv.ReplaceServer(dead, r.Procs.Addrs[spare])
	to := r.Timeline.Event(fmt.Sprintf("server 0 replaced by %d: %d replica moves, %d leaderships", spare, len(replaced.Moves), replaced.Leaders))
	r.Timeline.Window(from, to, "replacing a dead server")
	if err != nil {
		return nil, err
	}
	return func() {
		r.Check("replacing a dead server completes", "≤ "+addBound.String(), replaced.Took.Round(time.Millisecond).String(), replaced.Took <= addBound)
		got, err := membership.MovedOnce(before, dead, r.Procs.Addrs[spare], replaced.Moves)
		if err != nil {
			got = err.Error()
		}
		r.Check("each of the dead server's replicas moved once, onto the new one", "one move each", got, err == nil)
		r.RatioCheck("throughput while replacing a dead server", timeline.Window{From: from, To: to}, movingFloor)
		r.Figure("replica moves", "%d in %v; %d keys copied", len(replaced.Moves), replaced.Took.Round(time.Millisecond), replaced.KeysCopied())
		evenness(r, "at the end")()
	}, nil
}
