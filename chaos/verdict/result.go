// Package verdict holds how a chaos run is judged: the checks (a target
// and what was measured) and figures (measured, no target) it records,
// the throughput checks of a fault window against the healthy baseline,
// the replicas' convergence and the history's linearizability, and the
// verdict they add up to.
package verdict

import "fmt"

// Result is a run's outcome.
type Result struct {
	Pass    bool
	Reason  string // why it failed: the first failed check
	Checks  []Check
	Figures []Figure
}

// Check is one verdict criterion.
type Check struct {
	Name, Target, Got string
	Pass              bool
}

// Figure is a measured value that has no target.
type Figure struct{ Name, Value string }

// Check records a verdict criterion.
func (r *Result) Check(name, target, got string, pass bool) {
	r.Checks = append(r.Checks, Check{Name: name, Target: target, Got: got, Pass: pass})
}

// Figure records a measured value without a target.
func (r *Result) Figure(name, format string, args ...any) {
	r.Figures = append(r.Figures, Figure{Name: name, Value: fmt.Sprintf(format, args...)})
}

// Decide sets Pass (every check passed) and, if one failed, Reason from
// the first that did.
func (r *Result) Decide() {
	r.Pass = true
	for _, c := range r.Checks {
		if !c.Pass {
			r.Pass = false
			if r.Reason == "" {
				r.Reason = fmt.Sprintf("%s: want %s, got %s", c.Name, c.Target, c.Got)
			}
		}
	}
}
