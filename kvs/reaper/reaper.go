// Package reaper paces a server's looks for connections to close: idle
// ones every so often, and, while the server is over its reply budget,
// stalled ones at the stall timeout's pace. Each look wakes the process
// (and the Go runtime's monitor thread with it), and on a busy core each
// wake delays the request it lands in: looking at the stall timeout's
// pace all the time made 16 wakes a second.
package reaper

import "time"

// Budget is the server's reply budget as Run watches it
// (backend.Budget).
type Budget interface {
	// Over reports whether the budget is over its limit.
	Over() bool
	// WentOver holds a token once a charge has taken the budget over.
	WentOver() <-chan struct{}
}

// Intervals returns how often to look while the server is within its
// reply budget, every (a quarter of idleTimeout, at most most), and while
// it is over it, stallEvery (a quarter of stallTimeout, at most every);
// both at least a millisecond.
func Intervals(idleTimeout, stallTimeout, most time.Duration) (every, stallEvery time.Duration) {
	every = max(min(idleTimeout/4, most), time.Millisecond)
	return every, max(min(every, stallTimeout/4), time.Millisecond)
}

// Run calls look every `every` while budget is within its limit, and every
// stallEvery while it is over, from when a token on budget.WentOver()
// says it went over, until stop is closed.
func Run(stop <-chan struct{}, every, stallEvery time.Duration, budget Budget, look func(now time.Time)) {
	timer := time.NewTimer(every)
	defer timer.Stop()
	due := time.Now().Add(every)
	arm := func(d time.Duration) {
		due = time.Now().Add(d)
		timer.Reset(d)
	}
	// Heard only while the looks are `every` apart: at the stall pace a
	// budget that goes over and under again and again would wake the
	// reaper at each crossing (a token left meanwhile waits).
	wentOver := budget.WentOver()
	for {
		select {
		case <-stop:
			return
		case <-wentOver:
			if time.Until(due) > stallEvery { // only ever sooner
				arm(stallEvery)
			}
			wentOver = nil
		case now := <-timer.C:
			look(now)
			if budget.Over() {
				arm(stallEvery)
				wentOver = nil
			} else {
				arm(every)
				wentOver = budget.WentOver()
			}
		}
	}
}
