package moves

import (
	"fmt"
	"strings"
	"time"

	"github.com/batchkv/batchkv/chaos/experiment"
	"github.com/batchkv/batchkv/chaos/verdict"
	"github.com/batchkv/batchkv/wire"
)

// evenness measures now how evenly the members share the keys and the
// leaderships, and returns the function that records it as checks: every
// member within evenWithin of its share. Members' statuses are read one
// after another, so a leadership that moves meanwhile (a hand-over of the
// rebalance's last seconds, an election) can be counted on neither member
// or on both: the reading is taken again, for up to leadersSettle, until
// every shard has exactly one leader in it.
func evenness(r *experiment.Run, when string) func() {
	name := func(what string) string { return fmt.Sprintf("%s per member, %s", what, when) }
	target := "within " + verdict.Pct(evenWithin) + " of its share"
	m, err := r.Driver().Map()
	if err != nil {
		return func() { r.Check(name("keys"), target, err.Error(), false) }
	}
	var e evenTally
	for deadline := time.Now().Add(leadersSettle); ; time.Sleep(200 * time.Millisecond) {
		statuses := make([][]wire.ShardStatus, len(m.Servers))
		for i, addr := range m.Servers {
			st, err := r.Procs.Admin.Status(addr, wire.StatusRequest{}, 5*time.Second)
			if err != nil {
				return func() { r.Check(name("keys"), target, err.Error(), false) }
			}
			statuses[i] = st.Shards
		}
		e = tallyEvenness(m.Servers, m.Shards, statuses)
		if e.unsettled == "" || time.Now().After(deadline) {
			break
		}
	}
	return func() {
		r.Check(name("keys"), target, fmt.Sprintf("worst %s off:%s", verdict.Pct(e.keysOff), e.keys), e.keysOff <= evenWithin)
		dl := e.leads
		if e.unsettled != "" {
			dl += " (after " + leadersSettle.String() + ": " + e.unsettled + ")"
		}
		r.Check(name("shards led"), target, fmt.Sprintf("worst %s off:%s", verdict.Pct(e.leadsOff), dl), e.leadsOff <= evenWithin && e.unsettled == "")
	}
}

// evenTally is one reading of how members share keys and leaderships.
type evenTally struct {
	keysOff, leadsOff float64 // the worst member's distance from its share
	keys, leads       string  // each member's count
	unsettled         string  // the shards without exactly one leader, if any
}

// tallyEvenness counts, from each member's statuses (statuses[i] is
// servers[i]'s), every member's keys and leaderships, and how far the
// worst member is from its share of each.
func tallyEvenness(servers []string, shards int, statuses [][]wire.ShardStatus) evenTally {
	keys, leads := make([]float64, len(servers)), make([]float64, len(servers))
	ledBy := make([]int, shards)
	for i, sts := range statuses {
		for _, s := range sts {
			keys[i] += float64(s.Keys)
			if s.State == "Leader" {
				leads[i]++
				if s.Shard >= 0 && s.Shard < shards {
					ledBy[s.Shard]++
				}
			}
		}
	}
	worst := func(by []float64) (float64, string) {
		total := 0.0
		for _, v := range by {
			total += v
		}
		w, desc := 0.0, ""
		for i, addr := range servers {
			off := by[i]/(total/float64(len(servers))) - 1
			if off < 0 {
				off = -off
			}
			desc += fmt.Sprintf(" %s %.0f", addr, by[i])
			w = max(w, off)
		}
		return w, desc
	}
	var e evenTally
	e.keysOff, e.keys = worst(keys)
	e.leadsOff, e.leads = worst(leads)
	var bad []string
	for sh, n := range ledBy {
		if n != 1 {
			bad = append(bad, fmt.Sprintf("shard %d has %d leaders", sh, n))
		}
	}
	e.unsettled = strings.Join(bad, ", ")
	return e
}
