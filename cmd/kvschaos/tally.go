package main

import (
	"fmt"
	"io"
	"strings"
)

// tally counts each scenario's verdicts over repeated runs.
type tally struct {
	names  []string
	runs   map[string]int
	passes map[string]int
	fails  map[string][]string // the failed checks of each failed run
}

func newTally(names []string) *tally {
	return &tally{names: names, runs: map[string]int{}, passes: map[string]int{}, fails: map[string][]string{}}
}

// add records one run of name: its verdict and, when it failed, why.
func (t *tally) add(name string, pass bool, why []string) {
	t.runs[name]++
	if pass {
		t.passes[name]++
		return
	}
	t.fails[name] = append(t.fails[name], fmt.Sprintf("run %d: %s", t.runs[name], strings.Join(why, "; ")))
}

// print writes one line per scenario, "tally: NAME P/N", with the failed
// checks of each failed run under it.
func (t *tally) print(w io.Writer) {
	fmt.Fprintln(w, "tally of verdicts:")
	for _, name := range t.names {
		fmt.Fprintf(w, "tally: %-15s %d/%d PASS\n", name, t.passes[name], t.runs[name])
		for _, f := range t.fails[name] {
			fmt.Fprintf(w, "       %s\n", f)
		}
	}
}
