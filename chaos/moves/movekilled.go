package moves

import (
	"errors"
	"fmt"
	"time"

	"github.com/batchkv/batchkv/chaos/experiment"
	"github.com/batchkv/batchkv/chaos/verdict"
)

// killedMidMove kills -9 the destination of a move while it catches up
// (and restarts it), then the source of another, its shard's leader,
// once the destination votes; it tidies up with a rebalance.
func killedMidMove(r *experiment.Run) (func(), error) {
	spare, err := r.StartSpare()
	if err != nil {
		return nil, err
	}
	drv := r.Driver()
	if err := drv.AddMember(r.Procs.Addrs[spare]); err != nil {
		return nil, err
	}
	// 1. The destination dies while it catches up.
	restarted := make(chan error, 1)
	r.WhenStep("shard 0: "+r.Procs.Addrs[spare]+" added as a learner", func() {
		r.Timeline.Event(fmt.Sprintf("kill -9 server %d (the move's destination)", spare))
		err := r.Procs.Kill(spare)
		time.Sleep(r.Opt.Restart)
		r.Timeline.Event(fmt.Sprintf("restart server %d", spare))
		restarted <- errors.Join(err, r.Procs.Start(spare))
	})
	m, err := drv.Map()
	if err != nil {
		return nil, err
	}
	from := r.Timeline.Event(fmt.Sprintf("move shard 0: %s -> %s", m.Placement[0][1], r.Procs.Addrs[spare]))
	_, _, destErr := drv.Move(0, m.Placement[0][1], r.Procs.Addrs[spare])
	to := r.Timeline.Event(fmt.Sprintf("move ended: %v", verdict.OrOK(destErr)))
	r.Timeline.Window(from, to, "destination killed")
	if err := <-restarted; err != nil {
		return nil, err
	}
	// 2. The source, leading its shard, dies once the destination votes.
	const sh = 1
	l := r.LeaderNow(sh)
	if l < 0 || l == spare {
		return nil, fmt.Errorf("chaos: shard %d has no leader among the first servers", sh)
	}
	r.WhenStep(fmt.Sprintf("shard %d: %s is a voter", sh, r.Procs.Addrs[spare]), func() {
		r.Timeline.Event(fmt.Sprintf("kill -9 server %d (the move's source, the shard's leader)", l))
		_ = r.Procs.Kill(l)
	})
	from = r.Timeline.Event(fmt.Sprintf("move shard %d: %s -> %s", sh, r.Procs.Addrs[l], r.Procs.Addrs[spare]))
	_, _, srcErr := drv.Move(sh, r.Procs.Addrs[l], r.Procs.Addrs[spare])
	to = r.Timeline.Event(fmt.Sprintf("move ended: %v", verdict.OrOK(srcErr)))
	r.Timeline.Window(from, to, "source killed")
	r.StopWatchingSteps()
	if err := r.Procs.Start(l); err != nil {
		return nil, err
	}
	r.Timeline.Event(fmt.Sprintf("restart server %d", l))
	_, tidyErr := drv.Rebalance()
	r.Timeline.Event(fmt.Sprintf("rebalanced: %v", verdict.OrOK(tidyErr)))
	return func() {
		r.Figure("move whose destination was killed while catching up", "%s", verdict.OrOK(destErr))
		r.Check("move whose source (the shard's leader) was killed once the destination voted", "completes", verdict.OrOK(srcErr), srcErr == nil)
		r.Check("rebalance afterwards (reconciles what the kills left)", "completes", verdict.OrOK(tidyErr), tidyErr == nil)
	}, nil
}
