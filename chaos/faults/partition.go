package faults

import (
	"fmt"
	"syscall"
	"time"

	"github.com/batchkv/batchkv/chaos/experiment"
	"github.com/batchkv/batchkv/chaos/monitor"
)

// cutOff runs one partition of the current leader: cut applies it and
// heal lifts it. It returns the analysis of that partition.
func cutOff(r *experiment.Run, label string, cut, heal func(n int) error) (func(), error) {
	l, err := r.MustLeader()
	if err != nil {
		return nil, err
	}
	if err := cut(l); err != nil {
		return nil, err
	}
	from := r.Timeline.Event(fmt.Sprintf("%s: server %d (leader)", label, l))
	time.Sleep(r.Opt.Fault)
	if err := heal(l); err != nil {
		return nil, err
	}
	to := r.Timeline.Event("healed " + label)
	r.Timeline.Window(from, to, label)
	return func() {
		// It cannot commit without its peers, so it must acknowledge no
		// write called after the cut (a stronger check than "within its
		// lease"); one called before may have committed before it.
		last, acked := r.Pins[l].Acks.LastAckIn(from, from, to)
		got := "none"
		if acked {
			got = fmt.Sprintf("one at +%v", (last - from).Round(time.Millisecond))
		}
		r.Check(label+": writes called after the cut that the cut-off leader acknowledged", "none", got, !acked)
		if d, ok := monitor.FirstNotLeader(r.Monitor.Samples(), 0, l, from); ok {
			r.Figure(label+": cut-off leader seen stepped down", "+%v", d.Round(time.Millisecond))
		}
		failoverCheck(r, label+": a new leader serves writes", from)
		// From the heal, or from the failover if it ended later.
		settled := to
		if d, ok := r.Probe.Acks.FirstAckAfter(from); ok {
			settled = max(settled, from+d)
		}
		tc := monitor.TermChanges(monitor.Views(r.Monitor.Samples(), 0), settled, settled+4*time.Second)
		r.Check(label+": elections in the 4s after healing", "0 (the rejoining node disrupts nothing)", fmt.Sprint(tc), tc == 0)
	}, nil
}

// partition isolates shard 0's leader from its peers both ways, heals,
// then mutes it one way: the cut-off leader acknowledges nothing, a new
// one serves, and the rejoining node disrupts nothing.
func partition(r *experiment.Run) (func(), error) {
	two, err := cutOff(r, "leader isolated", func(n int) error { return r.Procs.Links.Isolate(n, true) },
		func(n int) error { return r.Procs.Links.Isolate(n, false) })
	if err != nil {
		return nil, err
	}
	time.Sleep(r.Opt.Recovery)
	one, err := cutOff(r, "leader muted (one-way)", func(n int) error { return r.Procs.Links.Mute(n, true) },
		func(n int) error { return r.Procs.Links.Mute(n, false) })
	if err != nil {
		return two, err
	}
	return func() { two(); one() }, nil
}

// pause stops shard 0's leader (SIGSTOP) for Opt.Pause: once resumed it
// steps down before it acknowledges a write called during the pause.
func pause(r *experiment.Run) (func(), error) {
	l, err := r.MustLeader()
	if err != nil {
		return nil, err
	}
	if err := r.Procs.Signal(l, syscall.SIGSTOP); err != nil {
		return nil, err
	}
	from := r.Timeline.Event(fmt.Sprintf("SIGSTOP server %d (leader)", l))
	time.Sleep(r.Opt.Pause)
	contAt := r.Timeline.Event(fmt.Sprintf("SIGCONT server %d", l))
	err = r.Procs.Signal(l, syscall.SIGCONT)
	r.Timeline.Window(from, contAt, "leader paused")
	return func() {
		// The issue sets no failover target for a pause: report it.
		if d, ok := r.Probe.Acks.FirstAckAfter(from); ok {
			r.Figure("a new leader serves writes", "%v after SIGSTOP", d.Round(time.Millisecond))
		}
		if tc := monitor.TermChanges(monitor.Views(r.Monitor.Samples(), 0), from, contAt); tc == 0 {
			r.Check("an election during the pause", "a new term", "none: the pause was too short", false)
			return
		}
		down, ok := monitor.FirstNotLeader(r.Monitor.Samples(), 0, l, contAt)
		if !ok {
			r.Check("resumed leader steps down", "steps down", "still leading", false)
			return
		}
		r.Figure("resumed leader seen stepped down", "+%v after SIGCONT", down.Round(time.Millisecond))
		// A write called before the pause may have committed before it and
		// be answered after it; one called during the pause reached a
		// leader that had been replaced, and must not be acknowledged by it.
		last, acked := r.Pins[l].Acks.LastAckIn(from, contAt, contAt+down)
		got := "none"
		if acked {
			got = fmt.Sprintf("a write at +%v", (last - contAt).Round(time.Millisecond))
		}
		r.Check("writes called during the pause that the resumed leader acknowledged before stepping down", "none", got, !acked)
	}, err
}
