package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/membership"
	"github.com/batchkv/batchkv/shard"
)

// membershipCmd runs map, add-server, remove-server, replace-server, move
// and rebalance.
// Each prints a line per step and ends with what moved and how long it
// took.
func membershipCmd(cmd []string, admin client.Admin, hosts []string, timeout time.Duration, stdout io.Writer) error {
	cl := &membership.Driver{Admin: admin, Seeds: hosts, RPCTimeout: timeout,
		Progress: func(line string) { fmt.Fprintf(stdout, "%s  %s\n", time.Now().Format("15:04:05.000"), line) }}
	defer func() { _ = cl.Close() }()
	var sum membership.Summary
	var err error
	switch {
	case cmd[0] == "map" && len(cmd) == 1:
		m, err := cl.Map()
		if err != nil {
			return err
		}
		return printMap(m, stdout)
	case cmd[0] == "add-server" && len(cmd) == 2:
		sum, err = cl.AddServer(cmd[1])
	case cmd[0] == "remove-server" && len(cmd) == 2:
		sum, err = cl.RemoveServer(cmd[1])
	case cmd[0] == "replace-server" && len(cmd) == 3:
		sum, err = cl.ReplaceServer(cmd[1], cmd[2])
	case cmd[0] == "rebalance" && len(cmd) == 1:
		sum, err = cl.Rebalance()
	case cmd[0] == "move" && len(cmd) == 3:
		return move(cl, cmd[1], cmd[2], stdout)
	default:
		return fmt.Errorf("bad command %q", strings.Join(cmd, " "))
	}
	printSummary(sum, err, stdout)
	return err
}

// move moves one replica of a shard: to the server named, from the one
// of its replicas that holds the most replicas overall (at RF 1, its only
// one).
func move(cl *membership.Driver, shardArg, to string, stdout io.Writer) error {
	start := time.Now()
	sh, err := strconv.Atoi(shardArg)
	if err != nil {
		return fmt.Errorf("move %q: not a shard number", shardArg)
	}
	m, err := cl.Map()
	if err != nil {
		return err
	}
	if sh < 0 || sh >= m.Shards {
		return fmt.Errorf("move %d: the cluster has shards 0 to %d", sh, m.Shards-1)
	}
	if slices.Contains(m.Placement[sh], to) {
		// What was asked holds already: nothing to do, as mkdir -p.
		fmt.Fprintf(stdout, "shard %d already has a replica on %s (replicas %s): nothing to move; kvsctl map shows the shards each server holds\n",
			sh, to, strings.Join(m.Placement[sh], " "))
		return nil
	}
	load := map[string]int{}
	for _, reps := range m.Placement {
		for _, r := range reps {
			load[r]++
		}
	}
	from := ""
	for _, r := range m.Placement[sh] {
		if r != to && (from == "" || load[r] > load[from]) {
			from = r
		}
	}
	_, mv, err := cl.Move(sh, from, to)
	if err != nil {
		return err
	}
	printSummary(membership.Summary{Moves: []membership.Moved{mv}, Took: time.Since(start)}, nil, stdout)
	return nil
}

// printSummary prints what a membership change moved: "done: ..." when
// it succeeded; when it failed (err), what completed before it did, if
// anything, since the error follows on stderr.
func printSummary(sum membership.Summary, err error, stdout io.Writer) {
	if err != nil && len(sum.Moves) == 0 && sum.Leaders == 0 {
		return
	}
	head := "done:"
	if err != nil {
		head = "failed after"
	}
	fmt.Fprintf(stdout, "%s %d replica moves (%d keys copied), %d leaderships handed over, in %v\n",
		head, len(sum.Moves), sum.KeysCopied(), sum.Leaders, sum.Took.Round(time.Millisecond))
	for _, mv := range sum.Moves {
		fmt.Fprintf(stdout, "  %s: %s -> %s, %d keys, caught up in %v, move took %v\n",
			mv.Name, mv.From, mv.To, mv.Keys, mv.CatchUp.Round(time.Millisecond), mv.Took.Round(time.Millisecond))
	}
}

func printMap(m *shard.Map, stdout io.Writer) error {
	fmt.Fprintf(stdout, "epoch %d: %d servers, %d shards, RF %d; meta group on %s\n",
		m.Epoch, len(m.Servers), m.Shards, m.RF, strings.Join(m.Meta, ","))
	w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "SERVER\tREPLICAS\tPREFERRED LEADER OF")
	for _, s := range m.Servers {
		n, lead := 0, 0
		for _, reps := range m.Placement {
			for i, r := range reps {
				if r == s {
					n++
					if i == 0 {
						lead++
					}
				}
			}
		}
		fmt.Fprintf(w, "%s\t%d\t%d\n", s, n, lead)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	w = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "SHARD\tREPLICAS (preferred leader first)")
	for sh, reps := range m.Placement {
		fmt.Fprintf(w, "%d\t%s\n", sh, strings.Join(reps, " "))
	}
	return w.Flush()
}
