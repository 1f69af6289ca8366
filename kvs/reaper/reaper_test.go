package reaper

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// budget is a reply budget whose state the test sets.
type budget struct {
	over     atomic.Bool
	wentOver chan struct{}
}

func newBudget() *budget { return &budget{wentOver: make(chan struct{}, 1)} }

func (b *budget) Over() bool                { return b.over.Load() }
func (b *budget) WentOver() <-chan struct{} { return b.wentOver }

// goOver takes the budget over, leaving a token as a charge would.
func (b *budget) goOver() {
	b.over.Store(true)
	select {
	case b.wentOver <- struct{}{}:
	default:
	}
}

// run starts Run with looks an hour apart within the budget and every
// stallEvery over it, and returns a channel that gets each look.
func run(t *testing.T, b *budget, stallEvery time.Duration) <-chan time.Time {
	t.Helper()
	looks := make(chan time.Time, 1000)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { Run(stop, time.Hour, stallEvery, b, func(now time.Time) { looks <- now }); close(done) }()
	t.Cleanup(func() { close(stop); <-done })
	return looks
}

// looksWithin counts the looks that come within d.
func looksWithin(looks <-chan time.Time, d time.Duration) int {
	n := 0
	for end := time.After(d); ; {
		select {
		case <-looks:
			n++
		case <-end:
			return n
		}
	}
}

func TestIntervals(t *testing.T) {
	every, stallEvery := Intervals(2*time.Minute, 250*time.Millisecond, time.Second)
	require.Equal(t, time.Second, every, "a quarter of the idle timeout, at most a second")
	require.Equal(t, 62500*time.Microsecond, stallEvery, "a quarter of the stall timeout")
	every, stallEvery = Intervals(time.Second, time.Minute, time.Second)
	require.Equal(t, 250*time.Millisecond, every)
	require.Equal(t, every, stallEvery, "never slower over the budget than within it")
	every, stallEvery = Intervals(time.Nanosecond, time.Nanosecond, time.Second)
	require.Equal(t, time.Millisecond, every, "at least a millisecond")
	require.Equal(t, time.Millisecond, stallEvery)
}

// TestRunLooksAtTheStallPaceOnlyWhileOver: within the budget nothing is
// looked at for an hour; a budget going over brings a look within the
// stall pace, and more at that pace while it stays over; once it is back
// within, the looks stop again.
func TestRunLooksAtTheStallPaceOnlyWhileOver(t *testing.T) {
	b := newBudget()
	looks := run(t, b, 20*time.Millisecond)
	require.Zero(t, looksWithin(looks, 100*time.Millisecond), "looked within the budget")

	b.goOver()
	select {
	case <-looks:
	case <-time.After(5 * time.Second):
		t.Fatal("the budget went over and nothing was looked at")
	}
	require.GreaterOrEqual(t, looksWithin(looks, 300*time.Millisecond), 3, "no looks at the stall pace while over")

	b.over.Store(false)
	looksWithin(looks, 50*time.Millisecond) // the look under way, if any, sees it within
	require.Zero(t, looksWithin(looks, 200*time.Millisecond), "still looking at the stall pace once within")
}

// TestRunBudgetCrossingOftenDoesNotPutTheLookOff: a budget that goes over
// and under again every millisecond still gets its look within the stall
// pace: a crossing never moves the look later.
func TestRunBudgetCrossingOftenDoesNotPutTheLookOff(t *testing.T) {
	b := newBudget()
	looks := run(t, b, 50*time.Millisecond)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				b.goOver()
				b.over.Store(false)
			}
		}
	}()
	select {
	case <-looks:
	case <-time.After(5 * time.Second):
		t.Fatal("a budget crossing every millisecond put the look off")
	}
}
