package failover_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/kvs/replica/failover"
)

var (
	tm   = failover.DefaultTiming()
	hb   = 800 * time.Millisecond
	reps = []string{"a", "b", "c"}
)

func view(self, leader string) failover.View {
	return failover.View{Self: self, Replicas: reps, Leader: leader, Follower: true}
}

func TestCrashedLeader(t *testing.T) {
	cases := []struct {
		name   string
		view   failover.View
		probes map[string]failover.Probe
		wait   time.Duration
		elect  bool
	}{
		{"leader gone, peer alive, first in turn", view("b", "a"),
			map[string]failover.Probe{"a": failover.Gone, "c": failover.Alive}, 0, true},
		{"leader gone, peer ahead alive: wait one stagger", view("c", "a"),
			map[string]failover.Probe{"a": failover.Gone, "b": failover.Alive}, tm.Stagger, true},
		{"leader gone, alone: no majority", view("b", "a"),
			map[string]failover.Probe{"a": failover.Gone, "c": failover.Unknown}, 0, false},
		{"leader gone, other peer gone too", view("b", "a"),
			map[string]failover.Probe{"a": failover.Gone, "c": failover.Gone}, 0, false},
		{"leader merely slow", view("b", "a"),
			map[string]failover.Probe{"a": failover.Unknown, "c": failover.Alive}, 0, false},
		{"leader alive", view("b", "a"),
			map[string]failover.Probe{"a": failover.Alive, "c": failover.Alive}, 0, false},
		{"not a follower", failover.View{Self: "b", Replicas: reps, Leader: "a"},
			map[string]failover.Probe{"a": failover.Gone, "c": failover.Alive}, 0, false},
		{"no known leader", view("b", ""),
			map[string]failover.Probe{"a": failover.Gone, "c": failover.Alive}, 0, false},
		{"five replicas, two ahead alive", failover.View{Self: "d", Replicas: []string{"a", "b", "c", "d", "e"}, Leader: "a", Follower: true},
			map[string]failover.Probe{"a": failover.Gone, "b": failover.Alive, "c": failover.Alive, "e": failover.Unknown}, 2 * tm.Stagger, true},
		{"five replicas, only one other alive", failover.View{Self: "d", Replicas: []string{"a", "b", "c", "d", "e"}, Leader: "a", Follower: true},
			map[string]failover.Probe{"a": failover.Gone, "b": failover.Alive}, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wait, elect := failover.CrashedLeader(c.view, c.probes, tm)
			require.Equal(t, c.elect, elect)
			require.Equal(t, c.wait, wait)
		})
	}
}

func TestCrashWait(t *testing.T) {
	require.Equal(t, 160*time.Millisecond, failover.CrashWait(0, 0, hb), "two heartbeat intervals")
	require.Equal(t, 60*time.Millisecond, failover.CrashWait(0, 100*time.Millisecond, hb), "probing took part of it")
	require.Equal(t, tm.Stagger, failover.CrashWait(tm.Stagger, 0, hb), "the turn is longer")
	require.Equal(t, time.Duration(0), failover.CrashWait(0, time.Second, hb))
}

func TestStillElect(t *testing.T) {
	d := failover.Decision{At: time.Unix(100, 0), Term: 4, Leader: "a"}
	quiet := failover.Now{Follower: true, LastContact: d.At.Add(-time.Second), Leader: "a", Term: 4}
	cases := []struct {
		name string
		edit func(n *failover.Now)
		want bool
	}{
		{"still silent", func(*failover.Now) {}, true},
		{"leader forgotten", func(n *failover.Now) { n.Leader = "" }, true},
		{"heard from a leader since", func(n *failover.Now) { n.LastContact = d.At.Add(time.Millisecond) }, false},
		{"a new leader is known", func(n *failover.Now) { n.Leader = "c" }, false},
		{"became candidate or leader", func(n *failover.Now) { n.Follower = false }, false},
		{"someone else called an election meanwhile", func(n *failover.Now) { n.Term = 5 }, false},
		{"voted for the old leader in its term", func(n *failover.Now) { n.VotedFor = "a" }, true},
		{"voted for another candidate in its term", func(n *failover.Now) { n.VotedFor = "c" }, false},
		{"asked to vote in a later term, not yet raised", func(n *failover.Now) { n.Asked = 5 }, false},
		{"asked to vote in its own term", func(n *failover.Now) { n.Asked = 4 }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := quiet
			c.edit(&n)
			require.Equal(t, c.want, failover.StillElect(n, d))
		})
	}
}

func TestAskAboutSilence(t *testing.T) {
	now := time.Unix(100, 0)
	cases := []struct {
		name                   string
		view                   failover.View
		lastContact, lastAsked time.Time
		want                   bool
	}{
		{"silent for a timeout, not asked lately", view("b", "a"), now.Add(-hb), now.Add(-hb), true},
		{"silent for a timeout less the slack", view("b", "a"), now.Add(-hb + tm.SilenceSlack), time.Time{}, true},
		{"heard from lately", view("b", "a"), now.Add(-hb + tm.SilenceSlack + time.Millisecond), time.Time{}, false},
		{"asked lately", view("b", "a"), now.Add(-2 * hb), now.Add(-tm.SilenceAskEvery + 1), false},
		{"asked a while ago, still silent", view("b", "a"), now.Add(-2 * hb), now.Add(-tm.SilenceAskEvery), true},
		{"no known leader", view("b", ""), now.Add(-2 * hb), time.Time{}, false},
		{"not a follower", failover.View{Self: "b", Replicas: reps, Leader: "a"}, now.Add(-2 * hb), time.Time{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, failover.AskAboutSilence(c.view, now, c.lastContact, c.lastAsked, hb, tm))
		})
	}
}

func TestSilentMajority(t *testing.T) {
	silentC := failover.Report{Replica: "c", Leader: "a", SinceContact: hb}
	cases := []struct {
		name    string
		view    failover.View
		reports []failover.Report
		wait    time.Duration
		elect   bool
	}{
		{"peer silent too", view("b", "a"), []failover.Report{silentC}, 0, true},
		{"peer silent too, and ahead", view("c", "a"), []failover.Report{{Replica: "b", SinceContact: 2 * hb}}, tm.Stagger, true},
		{"peer heard from the leader lately", view("b", "a"), []failover.Report{{Replica: "c", Leader: "a", SinceContact: hb - tm.SilenceSlack - 1}}, 0, false},
		{"peer silent a little less long", view("b", "a"), []failover.Report{{Replica: "c", Leader: "a", SinceContact: hb - tm.SilenceSlack}}, 0, true},
		{"five replicas: a peer ahead not silent yet still takes its turn first", failover.View{Self: "d", Replicas: []string{"a", "b", "c", "d", "e"}, Leader: "a", Follower: true},
			[]failover.Report{{Replica: "b", SinceContact: hb / 2}, {Replica: "c", SinceContact: hb}, {Replica: "e", SinceContact: hb}}, 2 * tm.Stagger, true},
		{"peer follows another leader", view("b", "a"), []failover.Report{{Replica: "c", Leader: "c2", SinceContact: hb}}, 0, false},
		{"peer leads", view("b", "a"), []failover.Report{{Replica: "c", IsLeader: true, SinceContact: hb}}, 0, false},
		{"only the leader answers", view("b", "a"), []failover.Report{{Replica: "a", SinceContact: hb}}, 0, false},
		{"no answers", view("b", "a"), nil, 0, false},
		{"the same peer twice counts once", failover.View{Self: "d", Replicas: []string{"a", "b", "c", "d", "e"}, Leader: "a", Follower: true},
			[]failover.Report{{Replica: "e", SinceContact: hb}, {Replica: "e", SinceContact: hb}}, 0, false},
		{"not a follower", failover.View{Self: "b", Replicas: reps, Leader: "a"}, []failover.Report{silentC}, 0, false},
		{"a silent peer's log is ahead: it calls, not us", view("b", "a"),
			[]failover.Report{{Replica: "c", SinceContact: hb, Log: failover.LogPosition{Term: 1, Index: 1}}}, 0, false},
		{"our log is ahead of the silent peer's", failover.View{Self: "c", Replicas: reps, Leader: "a", Follower: true, Log: failover.LogPosition{Term: 2, Index: 1}},
			[]failover.Report{{Replica: "b", SinceContact: hb, Log: failover.LogPosition{Term: 1, Index: 9}}}, tm.Stagger, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wait, elect := failover.SilentMajority(c.view, c.reports, hb, tm)
			require.Equal(t, c.elect, elect)
			require.Equal(t, c.wait, wait)
		})
	}
}

func TestHandBack(t *testing.T) {
	t0 := time.Unix(100, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	type step struct {
		at      time.Duration
		leading bool
		failed  bool // the preferred replica's heartbeats fail before this tick
		resumed bool // they resume before this tick
		want    bool
	}
	cases := []struct {
		name  string
		self  string
		steps []step
	}{
		{"hands back after leading a while", "b", []step{
			{0, true, false, false, false}, {tm.HandBackAfterLead - 1, true, false, false, false}, {tm.HandBackAfterLead, true, false, false, true}}},
		{"the preferred replica never hands back", "a", []step{
			{0, true, false, false, false}, {time.Minute, true, false, false, false}}},
		{"not while the preferred replica fails heartbeats", "b", []step{
			{0, true, true, false, false}, {time.Minute, true, false, false, false}}},
		{"only once it has been healthy a while", "b", []step{
			{0, true, true, false, false}, {time.Minute, true, false, true, false},
			{time.Minute + tm.HandBackHealthyFor - 1, true, false, false, false}, {time.Minute + tm.HandBackHealthyFor, true, false, false, true}}},
		{"losing leadership restarts the lead time", "b", []step{
			{0, true, false, false, false}, {tm.HandBackAfterLead / 2, false, false, false, false},
			{tm.HandBackAfterLead, true, false, false, false}, {2 * tm.HandBackAfterLead, true, false, false, true}}},
		{"after a hand-back, wait again before retrying", "b", []step{
			{0, true, false, false, false}, {tm.HandBackAfterLead, true, false, false, true},
			{tm.HandBackAfterLead + 1, true, false, false, false}, {2*tm.HandBackAfterLead + 1, true, false, false, true}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := failover.NewHandBack(c.self, "a", tm)
			for i, s := range c.steps {
				if s.failed {
					h.HeartbeatFailed("a")
				}
				if s.resumed {
					h.HeartbeatResumed("a", at(s.at))
				}
				require.Equal(t, s.want, h.Tick(at(s.at), s.leading), "step %d at %v", i, s.at)
			}
		})
	}
}

func TestLogPositionBehind(t *testing.T) {
	p := failover.LogPosition{Term: 3, Index: 10}
	require.True(t, p.Behind(failover.LogPosition{Term: 4, Index: 1}), "a later term wins over a longer log")
	require.True(t, p.Behind(failover.LogPosition{Term: 3, Index: 11}))
	require.False(t, p.Behind(p))
	require.False(t, p.Behind(failover.LogPosition{Term: 2, Index: 99}))
}

func TestTimingDefaults(t *testing.T) {
	require.Equal(t, failover.DefaultTiming(), failover.Timing{}.WithDefaults())
	custom := failover.Timing{Stagger: time.Millisecond}.WithDefaults()
	require.Equal(t, time.Millisecond, custom.Stagger)
	require.Equal(t, tm.ProbeHold, custom.ProbeHold)
}

// TestPeerAheadLeavesTheElectionToIt: a follower whose log is behind a
// peer's does not call the election after a crash; the old leader's
// report and its own do not count.
func TestPeerAheadLeavesTheElectionToIt(t *testing.T) {
	v := failover.View{Self: "b", Leader: "a", Replicas: []string{"a", "b", "c"}, Follower: true,
		Log: failover.LogPosition{Term: 3, Index: 6604}}
	require.True(t, failover.PeerAhead(v, []failover.Report{{Replica: "c", Log: failover.LogPosition{Term: 3, Index: 6607}}}))
	require.False(t, failover.PeerAhead(v, []failover.Report{{Replica: "c", Log: failover.LogPosition{Term: 3, Index: 6604}}}))
	require.False(t, failover.PeerAhead(v, []failover.Report{{Replica: "a", Log: failover.LogPosition{Term: 3, Index: 9999}}}))
	require.False(t, failover.PeerAhead(v, nil))
}

func TestNudgeWait(t *testing.T) {
	v := view("b", "a")
	probed := 100 * time.Millisecond
	require.Equal(t, tm.Stagger+tm.ProbeHold, failover.NudgeWait(v, probed, hb, tm), "the last peer's turn and a probe's hold")
	five := failover.View{Self: "b", Replicas: []string{"a", "b", "c", "d", "e"}, Leader: "a", Follower: true}
	require.Equal(t, 3*tm.Stagger+tm.ProbeHold, failover.NudgeWait(five, probed, hb, tm))
	require.Equal(t, 2*hb/5+tm.SilenceSlack, failover.NudgeWait(v, 0, hb, tm), "a peer cannot have been silent long enough yet")
	long := 2 * time.Second
	require.Equal(t, 2*long/5+tm.SilenceSlack-probed, failover.NudgeWait(v, probed, long, tm),
		"until the peer can have been silent long enough, when that is longer than the turn")
	require.Less(t, failover.NudgeWait(v, 200*time.Millisecond, hb, tm)+200*time.Millisecond, hb,
		"the nudge comes before the peer's own timer can fire")
}

func TestNudgeTarget(t *testing.T) {
	log := func(term, index uint64) failover.LogPosition { return failover.LogPosition{Term: term, Index: index} }
	three := failover.View{Self: "b", Replicas: reps, Leader: "a", Follower: true, Log: log(3, 100)}
	five := three
	five.Replicas = []string{"a", "b", "c", "d", "e"}
	elapsed := 700 * time.Millisecond
	silent := elapsed - tm.SilenceSlack
	ahead := func(r string, since time.Duration, l failover.LogPosition) failover.Report {
		return failover.Report{Replica: r, Leader: "a", SinceContact: since, Log: l}
	}
	cases := []struct {
		name    string
		view    failover.View
		reports []failover.Report
		want    string
	}{
		{"the peer ahead, silent as long", three, []failover.Report{ahead("c", silent, log(3, 101))}, "c"},
		{"the peer ahead has forgotten the leader", three, []failover.Report{{Replica: "c", SinceContact: silent, Log: log(3, 101)}}, "c"},
		{"the peer ahead still hears the leader", three, []failover.Report{ahead("c", silent-time.Millisecond, log(3, 101))}, ""},
		{"the peer ahead is a candidate already", three, []failover.Report{{Replica: "c", IsCandidate: true, SinceContact: time.Second, Log: log(3, 101)}}, ""},
		{"no peer ahead", three, []failover.Report{ahead("c", time.Second, log(3, 100))}, ""},
		{"a later term is ahead", three, []failover.Report{ahead("c", time.Second, log(4, 1))}, "c"},
		{"this replica has forgotten the leader it gave up on", failover.View{Self: "b", Replicas: reps, Follower: true, Log: log(3, 100)},
			[]failover.Report{ahead("c", time.Second, log(3, 101))}, ""},
		{"the old leader's own report", three, []failover.Report{{Replica: "a", IsLeader: true, Log: log(3, 200)}, ahead("c", time.Second, log(3, 101))}, "c"},
		{"not a follower", failover.View{Self: "b", Replicas: reps, Leader: "a", Log: three.Log},
			[]failover.Report{ahead("c", time.Second, log(3, 101))}, ""},
		{"five: the most up to date of three ahead", five, []failover.Report{
			ahead("c", time.Second, log(3, 101)), ahead("d", time.Second, log(3, 104)), ahead("e", time.Second, log(3, 102))}, "d"},
		{"five: the later term wins over the longer log", five, []failover.Report{
			ahead("c", time.Second, log(3, 900)), ahead("d", time.Second, log(4, 2)), ahead("e", time.Second, log(3, 100))}, "d"},
		{"five: the one ahead is not silent, the silent one is not ahead", five, []failover.Report{
			ahead("c", 0, log(3, 101)), ahead("d", time.Second, log(3, 100)), ahead("e", time.Second, log(3, 99))}, ""},
		{"five: only two of five silent", five, []failover.Report{
			ahead("c", time.Second, log(3, 101)), ahead("d", 0, log(3, 100)), ahead("e", 0, log(3, 100))}, ""},
		{"five: a peer leads", five, []failover.Report{
			ahead("c", time.Second, log(3, 101)), ahead("e", time.Second, log(3, 100)), {Replica: "d", IsLeader: true, Log: log(4, 1)}}, ""},
		{"five: a peer follows a new leader", five, []failover.Report{
			ahead("c", time.Second, log(3, 101)), ahead("e", time.Second, log(3, 100)), {Replica: "d", Leader: "e", Log: log(4, 1)}}, ""},
		{"five: a peer answers twice", five, []failover.Report{
			ahead("c", time.Second, log(3, 101)), ahead("c", time.Second, log(3, 101))}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := failover.NudgeTarget(c.view, c.reports, elapsed, hb, tm)
			require.Equal(t, c.want, got)
			require.Equal(t, c.want != "", ok)
		})
	}
	early := []failover.Report{ahead("c", 2*hb/5-time.Millisecond, log(3, 101))}
	_, ok := failover.NudgeTarget(three, early, 0, hb, tm)
	require.False(t, ok, "a peer must have been silent two of a live leader's longest heartbeat intervals at least")
}
