package faults

import (
	"fmt"
	"time"

	"github.com/batchkv/batchkv/chaos/experiment"
	"github.com/batchkv/batchkv/chaos/monitor"
	"github.com/batchkv/batchkv/chaos/timeline"
	"github.com/batchkv/batchkv/chaos/verdict"
)

// crash kills server n (the leader when leader), restarts it after
// opt.Restart, and returns the kill and restart times.
func crash(r *experiment.Run, n int, role string) (killAt, startAt time.Duration, err error) {
	killAt = r.Timeline.Event(fmt.Sprintf("kill -9 server %d (%s)", n, role))
	if err := r.Procs.Kill(n); err != nil {
		return 0, 0, err
	}
	time.Sleep(r.Opt.Restart)
	startAt = r.Timeline.Event(fmt.Sprintf("restart server %d", n))
	return killAt, startAt, r.Procs.Start(n)
}

// failoverCheck records how long after t the probe's first write called
// after t was acknowledged.
func failoverCheck(r *experiment.Run, name string, t time.Duration) {
	d, ok := r.Probe.Acks.FirstAckAfter(t)
	got := "no write acknowledged"
	if ok {
		got = d.Round(time.Millisecond).String()
	}
	r.Check(name, "≤ "+r.Opt.FailoverBound.String(), got, ok && d <= r.Opt.FailoverBound)
}

// crashLeader kills shard 0's leader and restarts it after Opt.Restart: a
// new leader must serve writes within Opt.FailoverBound.
func crashLeader(r *experiment.Run) (func(), error) {
	l := r.LeaderNow(0)
	killAt, startAt, err := crash(r, l, "leader")
	r.Timeline.Window(killAt, startAt, "leader down")
	return func() {
		failoverCheck(r, "a new leader serves writes", killAt)
		ss := r.Monitor.Samples()
		vs := monitor.Views(ss, 0)
		r.Figure("new leader", "server %d", monitor.LeaderAt(vs, startAt))
		d, ok := monitor.CaughtUp(ss, vs, 0, l, startAt)
		r.Figure("restarted old leader has the writes it missed", "%v after the restart (%v)", d.Round(time.Millisecond), ok)
	}, err
}

// crashFollower kills a follower of shard 0 and restarts it after
// Opt.Restart: throughput holds, and it is current again within 10 s.
func crashFollower(r *experiment.Run) (func(), error) {
	l := r.LeaderNow(0)
	f := r.Follower(l)
	killAt, startAt, err := crash(r, f, "follower")
	w := timeline.Window{From: killAt, To: startAt + min(10*time.Second, r.Opt.Recovery), Label: "follower down and rejoining"}
	r.Timeline.Window(w.From, w.To, w.Label)
	return func() {
		r.RatioCheck("throughput while a follower is down and rejoins", w, 0.75)
		ss := r.Monitor.Samples()
		d, ok := monitor.CaughtUp(ss, monitor.Views(ss, 0), 0, f, startAt)
		got := verdict.OrNever(d, ok)
		r.Check("restarted follower is current", "≤ 10s after the restart", got, ok && d <= 10*time.Second)
	}, err
}
