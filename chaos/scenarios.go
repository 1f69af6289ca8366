package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"time"

	"github.com/batchkv/batchkv/internal/runlog"
)

// scenario injects one experiment's faults while the loads run, and
// returns what to analyse once the run is over.
type scenario struct {
	about  string
	inject func(r *run) (analyse func(), err error)
}

// scenarioOrder lists the scenarios as `chaos.sh all` runs them.
var scenarioOrder = []string{"slow-follower", "slow-network", "crash-leader", "crash-follower", "partition", "pause", "rebalance", "move-killed", "random"}

var scenarios = map[string]scenario{
	"slow-follower":  {"one follower limited to a sliver of a CPU (the Raft seed's 0.02-CPU container)", slowFollower},
	"slow-network":   {"latency added to every Raft link of the leader, both ways, in steps; a follower lags meanwhile", slowNetwork},
	"crash-leader":   {"kill -9 the leader, restart it after a delay", crashLeader},
	"crash-follower": {"kill -9 a follower, restart it after a delay", crashFollower},
	"partition":      {"cut the leader off from its peers, heal; then a one-way partition", partition},
	"pause":          {"SIGSTOP the leader past the election timeout, then SIGCONT", pause},
	"rebalance":      {"add a 4th server to 3 and rebalance onto it, then remove one of the first 3 (RF=3, 12 shards)", rebalance},
	"move-killed":    {"kill -9 the destination of a shard move while it catches up, then the source of another, its shard's leader, once the destination votes", killedMidMove},
	"disk-full":      {"a follower's data dir (a tmpfs) filled below its reserve under the load, freed after the fault", diskFull},
	"random":         {"a random fault every interval, healed before the next (Jepsen's shape), moves of a replica to a spare server among them", random},
}

// ScenarioNames returns every scenario's name, in the order `all` runs them.
func ScenarioNames() []string { return append([]string(nil), scenarioOrder...) }

// About describes a scenario.
func About(name string) string { return scenarios[name].about }

// leaderNow returns shard sh's leader as the monitor last saw it, or -1.
func (r *run) leaderNow(sh int) int {
	r.mon.poll()
	vs := views(r.mon.samples(), sh)
	return leaderAt(vs, r.tl.since())
}

// mustLeader returns shard 0's leader, or an error if none is known.
func (r *run) mustLeader() (int, error) {
	if l := r.leaderNow(0); l >= 0 {
		return l, nil
	}
	return -1, fmt.Errorf("chaos: shard 0 has no known leader")
}

// follower returns a replica of shard 0 other than leader l.
func (r *run) follower(l int) int { return (max(l, 0) + 1) % r.opt.Servers }

// orNever renders a measured duration, or "never" when there is none.
func orNever(d time.Duration, ok bool) string {
	if !ok {
		return "never"
	}
	return d.Round(time.Millisecond).String()
}

func pct(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }

// ratioCheck records a check that a window's throughput is at least min
// times the baseline's.
// Thresholds of ratioCheck that this machine's noise alone does not
// cross: a second's throughput moves by a third from one second to the
// next, and a 15 s window's median by up to a fifth from one window to
// another with no fault at all.
const (
	// stallFloor is the share of the baseline's median second below which
	// a second counts as a stall.
	stallFloor = 0.5
	// maxStallShare is the share of a fault window's seconds that may be
	// stalls.
	maxStallShare = 0.2
)

// ratioCheck checks a fault window's throughput against the baseline's in
// two ways: the window's median second is at least least of the
// baseline's median second, and at most maxStallShare of its seconds fall
// below stallFloor of it (no stalls).
func (r *run) ratioCheck(name string, w Window, least float64) {
	b := r.baselineRate()
	secs, _, _ := r.tl.snapshot()
	fs := rates(secs, w.From, w.To)
	f := runlog.Median(fs)
	ratio := 0.0
	if b > 0 {
		ratio = f / b
	}
	r.check(name+": median second", "≥ "+pct(least)+" of the baseline's", fmt.Sprintf("%s (%.0f vs %.0f ops/s)", pct(ratio), f, b), ratio >= least)
	stalls := 0
	for _, x := range fs {
		if x < stallFloor*b {
			stalls++
		}
	}
	share := 0.0
	if len(fs) > 0 {
		share = float64(stalls) / float64(len(fs))
	}
	r.check(name+": seconds under "+pct(stallFloor)+" of the baseline's median", "≤ "+pct(maxStallShare)+" of them",
		fmt.Sprintf("%d of %d", stalls, len(fs)), len(fs) > 0 && share <= maxStallShare)
}

func slowFollower(r *run) (func(), error) {
	l, err := r.mustLeader()
	if err != nil {
		return nil, err
	}
	f := r.follower(l)
	pid := r.c.Pid(f)
	if err := r.cpu.Limit(pid, r.opt.CPUFraction); err != nil {
		return nil, err
	}
	from := r.tl.event(fmt.Sprintf("server %d (follower) limited to %s of a CPU", f, pct(r.opt.CPUFraction)))
	time.Sleep(r.opt.Fault)
	err = r.cpu.Unlimit(pid)
	to := r.tl.event("CPU limit lifted")
	w := Window{From: from, To: to, Label: "slow follower"}
	r.tl.window(w.From, w.To, w.Label)
	return func() {
		base, _ := r.windowOf("baseline")
		vs := views(r.mon.samples(), 0)
		tc, lc := termChanges(vs, base.From, r.tl.since()), leaderChanges(vs, base.From, r.tl.since())
		r.check("term changes from the baseline on", "0", fmt.Sprint(tc), tc == 0)
		r.check("leader changes from the baseline on", "0", fmt.Sprint(lc), lc == 0)
		r.ratioCheck("throughput while the follower is slow", w, 0.75)
		secs, _, _ := r.tl.snapshot()
		pb, pf := latencies(secs, base.From, base.To).Quantile(0.9999), latencies(secs, w.From, w.To).Quantile(0.9999)
		r.check("p99.99 batch latency while the follower is slow", "≤ 2x baseline",
			fmt.Sprintf("%.2fx (%s vs %s)", float64(pf)/float64(max(pb, 1)), ms(pf), ms(pb)), pf <= 2*pb)
	}, err
}

func slowNetwork(r *run) (func(), error) {
	l := r.leaderNow(0)
	f := r.follower(l)
	var wins []Window
	var stoppedAt, contAt time.Duration
	var restoresBefore uint64
	for i, lat := range r.opt.Latencies {
		from := r.tl.event(fmt.Sprintf("+%v on every Raft link of server %d (leader), both ways", lat, l))
		if err := r.c.Links.SetLatency(l, lat); err != nil {
			return nil, err
		}
		if i == len(r.opt.Latencies)-1 && r.opt.Lag > 0 {
			lead := min(5*time.Second, r.opt.Fault/4)
			time.Sleep(lead)
			restoresBefore = restoresOf(r.mon.samples(), 0, f, 0, r.tl.since())
			stoppedAt = r.tl.event(fmt.Sprintf("SIGSTOP server %d (follower) to make it lag", f))
			if err := r.c.Signal(f, syscall.SIGSTOP); err != nil {
				return nil, err
			}
			time.Sleep(r.opt.Lag)
			if err := r.c.Signal(f, syscall.SIGCONT); err != nil {
				return nil, err
			}
			contAt = r.tl.event(fmt.Sprintf("SIGCONT server %d", f))
			time.Sleep(max(r.opt.Fault-lead-r.opt.Lag, 0))
		} else {
			time.Sleep(r.opt.Fault)
		}
		if err := r.c.Links.SetLatency(l, 0); err != nil {
			return nil, err
		}
		w := Window{From: from, To: r.tl.event("latency removed"), Label: fmt.Sprintf("+%v", lat)}
		r.tl.window(w.From, w.To, w.Label)
		wins = append(wins, w)
		if i < len(r.opt.Latencies)-1 {
			// A healthy phase between the steps, which counts as baseline
			// too: the checks then compare each step with healthy seconds
			// on both sides of it, so that the machine's own drift during
			// the run does not pass for the fault's effect.
			again := r.tl.since()
			time.Sleep(r.opt.Baseline)
			r.tl.window(again, r.tl.since(), baselineAgain)
		}
	}
	return func() {
		ss := r.mon.samples()
		vs := views(ss, 0)
		for i, w := range wins {
			tc := termChanges(vs, w.From, w.To)
			r.check(fmt.Sprintf("elections with %s", w.Label), "0", fmt.Sprint(tc), tc == 0)
			switch lat := r.opt.Latencies[i]; {
			case lat <= 100*time.Millisecond:
				r.ratioCheck(fmt.Sprintf("throughput with %s", w.Label), w, 0.85)
			default:
				// The window also holds a follower's stop and catch-up,
				// so only its median is checked, not its stalls.
				b, f := r.baselineRate(), r.throughput(w)
				r.check(fmt.Sprintf("throughput with %s: median second", w.Label), "≥ "+pct(slowLinkFloor)+" of the baseline's",
					fmt.Sprintf("%s (%.0f vs %.0f ops/s)", pct(f/max(b, 1)), f, b), f >= slowLinkFloor*b)
			}
		}
		if stoppedAt == 0 {
			return
		}
		d, ok := caughtUp(ss, vs, 0, f, contAt)
		got := orNever(d, ok)
		r.check(fmt.Sprintf("follower %d, stopped %v, is current again after SIGCONT", f, r.opt.Lag), "catches up", got, ok)
		after := restoresOf(ss, 0, f, contAt, r.tl.since())
		r.figure("lagging follower caught up through a snapshot", "%v (snapshots restored: %d)", after > restoresBefore, after-restoresBefore)
	}, nil
}

// crash kills server n (the leader when leader), restarts it after
// opt.Restart, and returns the kill and restart times.
func (r *run) crash(n int, role string) (killAt, startAt time.Duration, err error) {
	killAt = r.tl.event(fmt.Sprintf("kill -9 server %d (%s)", n, role))
	if err := r.c.Kill(n); err != nil {
		return 0, 0, err
	}
	time.Sleep(r.opt.Restart)
	startAt = r.tl.event(fmt.Sprintf("restart server %d", n))
	return killAt, startAt, r.c.Start(n)
}

// failoverCheck records how long after t the probe's first write called
// after t was acknowledged.
func (r *run) failoverCheck(name string, t time.Duration) {
	d, ok := r.probe.acks.firstAckAfter(t)
	got := "no write acknowledged"
	if ok {
		got = d.Round(time.Millisecond).String()
	}
	r.check(name, "≤ "+r.opt.FailoverBound.String(), got, ok && d <= r.opt.FailoverBound)
}

func crashLeader(r *run) (func(), error) {
	l := r.leaderNow(0)
	killAt, startAt, err := r.crash(l, "leader")
	r.tl.window(killAt, startAt, "leader down")
	return func() {
		r.failoverCheck("a new leader serves writes", killAt)
		ss := r.mon.samples()
		vs := views(ss, 0)
		r.figure("new leader", "server %d", leaderAt(vs, startAt))
		d, ok := caughtUp(ss, vs, 0, l, startAt)
		r.figure("restarted old leader has the writes it missed", "%v after the restart (%v)", d.Round(time.Millisecond), ok)
	}, err
}

func crashFollower(r *run) (func(), error) {
	l := r.leaderNow(0)
	f := r.follower(l)
	killAt, startAt, err := r.crash(f, "follower")
	w := Window{From: killAt, To: startAt + min(10*time.Second, r.opt.Recovery), Label: "follower down and rejoining"}
	r.tl.window(w.From, w.To, w.Label)
	return func() {
		r.ratioCheck("throughput while a follower is down and rejoins", w, 0.75)
		ss := r.mon.samples()
		d, ok := caughtUp(ss, views(ss, 0), 0, f, startAt)
		got := orNever(d, ok)
		r.check("restarted follower is current", "≤ 10s after the restart", got, ok && d <= 10*time.Second)
	}, err
}

// cutOff runs one partition of the current leader: cut applies it and
// heal lifts it. It returns the analysis of that partition.
func (r *run) cutOff(label string, cut, heal func(n int) error) (func(), error) {
	l, err := r.mustLeader()
	if err != nil {
		return nil, err
	}
	if err := cut(l); err != nil {
		return nil, err
	}
	from := r.tl.event(fmt.Sprintf("%s: server %d (leader)", label, l))
	time.Sleep(r.opt.Fault)
	if err := heal(l); err != nil {
		return nil, err
	}
	to := r.tl.event("healed " + label)
	r.tl.window(from, to, label)
	return func() {
		// It cannot commit without its peers, so it must acknowledge no
		// write called after the cut (a stronger check than "within its
		// lease"); one called before may have committed before it.
		last, acked := r.pins[l].acks.lastAckIn(from, from, to)
		got := "none"
		if acked {
			got = fmt.Sprintf("one at +%v", (last - from).Round(time.Millisecond))
		}
		r.check(label+": writes called after the cut that the cut-off leader acknowledged", "none", got, !acked)
		if d, ok := firstNotLeader(r.mon.samples(), 0, l, from); ok {
			r.figure(label+": cut-off leader seen stepped down", "+%v", d.Round(time.Millisecond))
		}
		r.failoverCheck(label+": a new leader serves writes", from)
		// From the heal, or from the failover if it ended later.
		settled := to
		if d, ok := r.probe.acks.firstAckAfter(from); ok {
			settled = max(settled, from+d)
		}
		tc := termChanges(views(r.mon.samples(), 0), settled, settled+4*time.Second)
		r.check(label+": elections in the 4s after healing", "0 (the rejoining node disrupts nothing)", fmt.Sprint(tc), tc == 0)
	}, nil
}

func partition(r *run) (func(), error) {
	two, err := r.cutOff("leader isolated", func(n int) error { return r.c.Links.Isolate(n, true) },
		func(n int) error { return r.c.Links.Isolate(n, false) })
	if err != nil {
		return nil, err
	}
	time.Sleep(r.opt.Recovery)
	one, err := r.cutOff("leader muted (one-way)", func(n int) error { return r.c.Links.Mute(n, true) },
		func(n int) error { return r.c.Links.Mute(n, false) })
	if err != nil {
		return two, err
	}
	return func() { two(); one() }, nil
}

func pause(r *run) (func(), error) {
	l, err := r.mustLeader()
	if err != nil {
		return nil, err
	}
	if err := r.c.Signal(l, syscall.SIGSTOP); err != nil {
		return nil, err
	}
	from := r.tl.event(fmt.Sprintf("SIGSTOP server %d (leader)", l))
	time.Sleep(r.opt.Pause)
	contAt := r.tl.event(fmt.Sprintf("SIGCONT server %d", l))
	err = r.c.Signal(l, syscall.SIGCONT)
	r.tl.window(from, contAt, "leader paused")
	return func() {
		// The issue sets no failover target for a pause: report it.
		if d, ok := r.probe.acks.firstAckAfter(from); ok {
			r.figure("a new leader serves writes", "%v after SIGSTOP", d.Round(time.Millisecond))
		}
		if tc := termChanges(views(r.mon.samples(), 0), from, contAt); tc == 0 {
			r.check("an election during the pause", "a new term", "none: the pause was too short", false)
			return
		}
		down, ok := firstNotLeader(r.mon.samples(), 0, l, contAt)
		if !ok {
			r.check("resumed leader steps down", "steps down", "still leading", false)
			return
		}
		r.figure("resumed leader seen stepped down", "+%v after SIGCONT", down.Round(time.Millisecond))
		// A write called before the pause may have committed before it and
		// be answered after it; one called during the pause reached a
		// leader that had been replaced, and must not be acknowledged by it.
		last, acked := r.pins[l].acks.lastAckIn(from, contAt, contAt+down)
		got := "none"
		if acked {
			got = fmt.Sprintf("a write at +%v", (last - contAt).Round(time.Millisecond))
		}
		r.check("writes called during the pause that the resumed leader acknowledged before stepping down", "none", got, !acked)
	}, err
}

// randomFault is one fault of the random scenario.
type randomFault struct {
	name  string
	apply func(r *run, leader, follower int) (heal func() error, err error)
}

var randomFaults = []randomFault{
	{"kill the leader", func(r *run, l, _ int) (func() error, error) {
		return func() error { return r.c.Start(l) }, r.c.Kill(l)
	}},
	{"kill a follower", func(r *run, _, f int) (func() error, error) {
		return func() error { return r.c.Start(f) }, r.c.Kill(f)
	}},
	{"pause the leader", func(r *run, l, _ int) (func() error, error) {
		return func() error { return r.c.Signal(l, syscall.SIGCONT) }, r.c.Signal(l, syscall.SIGSTOP)
	}},
	{"isolate the leader", func(r *run, l, _ int) (func() error, error) {
		return func() error { return r.c.Links.Isolate(l, false) }, r.c.Links.Isolate(l, true)
	}},
	{"mute the leader (one-way)", func(r *run, l, _ int) (func() error, error) {
		return func() error { return r.c.Links.Mute(l, false) }, r.c.Links.Mute(l, true)
	}},
	{"isolate a follower", func(r *run, _, f int) (func() error, error) {
		return func() error { return r.c.Links.Isolate(f, false) }, r.c.Links.Isolate(f, true)
	}},
	{"+100ms on the leader's links", func(r *run, l, _ int) (func() error, error) {
		return func() error { return r.c.Links.SetLatency(l, 0) }, r.c.Links.SetLatency(l, 100*time.Millisecond)
	}},
	{"starve a follower's CPU", func(r *run, _, f int) (func() error, error) {
		pid := r.c.Pid(f)
		return func() error { return r.cpu.Unlimit(pid) }, r.cpu.Limit(pid, r.opt.CPUFraction)
	}},
}

func random(r *run) (func(), error) {
	rng := rand.New(rand.NewPCG(r.opt.Seed, 7))
	hold := max(r.opt.Interval-time.Second, r.opt.Interval/2)
	counts := map[string]int{}
	faults := randomFaults
	if r.opt.Spares > 0 {
		spare, err := r.startSpare()
		if err != nil {
			return nil, err
		}
		if err := r.driver().AddMember(r.c.Addrs[spare]); err != nil {
			return nil, err
		}
		faults = append(slices.Clone(faults), randomFault{"move a follower's replica to the spare, and back", moveToSpare})
	}
	end := r.tl.since() + r.opt.Fault
	for r.tl.since() < end {
		l := r.leaderNow(0)
		if l < 0 {
			l = rng.IntN(r.opt.Servers)
		}
		f := r.follower(l)
		fault := faults[rng.IntN(len(faults))]
		counts[fault.name]++
		from := r.tl.event(fmt.Sprintf("%s (leader %d, follower %d)", fault.name, l, f))
		heal, err := fault.apply(r, l, f)
		if err != nil {
			return nil, fmt.Errorf("chaos: %s: %w", fault.name, err)
		}
		time.Sleep(hold)
		if err := heal(); err != nil {
			return nil, fmt.Errorf("chaos: heal %s: %w", fault.name, err)
		}
		r.tl.window(from, r.tl.event("healed: "+fault.name), fault.name)
		time.Sleep(r.opt.Interval - hold)
	}
	return func() {
		for _, f := range faults {
			r.figure("injected: "+f.name, "%d times", counts[f.name])
		}
	}, nil
}
