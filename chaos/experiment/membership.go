package experiment

import (
	"fmt"
	"strings"
	"sync"

	"github.com/batchkv/batchkv/membership"
)

// Driver returns the run's membership driver, whose steps go to the run's
// log; CloseDriver closes it.
func (r *Run) Driver() *membership.Driver {
	r.drvOnce.Do(func() {
		r.drv = &membership.Driver{Admin: r.Procs.Admin, Seeds: r.Procs.Members(),
			Progress: func(line string) {
				r.Logf("%s", line)
				if f := r.onStep.Load(); f != nil {
					(*f)(line)
				}
			}}
	})
	return r.drv
}

// CloseDriver closes the membership driver.
func (r *Run) CloseDriver() error { return r.Driver().Close() }

// WhenStep calls f (once) with the first step the driver reports that
// contains want, from a goroutine of its own; it replaces the step
// watched before.
func (r *Run) WhenStep(want string, f func()) {
	var once sync.Once
	hook := func(line string) {
		if strings.Contains(line, want) {
			once.Do(func() { go f() })
		}
	}
	r.onStep.Store(&hook)
}

// StopWatchingSteps drops the step WhenStep watches for.
func (r *Run) StopWatchingSteps() { r.onStep.Store(nil) }

// StartSpare starts the run's spare server (with -join; not yet a
// member) and returns its index.
func (r *Run) StartSpare() (int, error) {
	if r.Opt.Spares < 1 {
		return 0, fmt.Errorf("chaos: %s needs a spare server (-spares 1)", r.Opt.Scenario)
	}
	spare := r.Opt.Servers
	return spare, r.Procs.Start(spare)
}
