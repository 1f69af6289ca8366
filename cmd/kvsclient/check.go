package main

import (
	"fmt"
	"io"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/batchkv/batchkv/internal/linz"
)

// The self-check's load: each checking goroutine sends a batch of 1 to
// checkMaxOps ops over the hot keys at most every checkPace, each with
// checkAttempt to be answered, so that its history stays small enough for
// porcupine to check in seconds whatever the run's length.
const (
	checkMaxOps  = 4
	checkPace    = 10 * time.Millisecond
	checkAttempt = 5 * time.Second
)

// selfCheck is the -check load: a few goroutines on a few hot keys whose
// every op is recorded, checked for linearizability with porcupine when
// the run ends.
type selfCheck struct {
	o    *options
	h    *linz.History
	done chan struct{}
}

// checkKeys names the hot keys; they are not keys of the bulk workload.
func checkKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("check%03d", i)
	}
	return keys
}

// startCheck starts o.checkClients checking goroutines on cl until stop
// is closed.
func startCheck(cl batchClient, o *options, stop <-chan struct{}) *selfCheck {
	c := &selfCheck{o: o, h: linz.NewHistory(), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		linz.Drive(o.checkClients, checkMaxOps, checkKeys(o.checkKeys), checkPace, checkAttempt, cl.Do, c.h, o.seed, stop, nil)
	}()
	return c
}

// finish waits for the checking goroutines, checks their history and
// prints the verdict: "linearizable: N ops ..." or the violation with the
// path of porcupine's visualization, which is also the error returned.
func (c *selfCheck) finish(stdout io.Writer) error {
	<-c.done
	ops := c.h.Ops()
	if len(ops) == 0 {
		return fmt.Errorf("check: no checked op was answered")
	}
	start := time.Now()
	res, err := linz.Check(ops, c.o.checkTimeout, c.o.checkHTML)
	took := time.Since(start).Seconds()
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	switch res {
	case porcupine.Ok:
		fmt.Fprintf(stdout, "linearizable: %d ops (%d keys, %d clients; checked in %.2fs)\n", len(ops), c.o.checkKeys, c.o.checkClients, took)
		return nil
	case porcupine.Illegal:
		fmt.Fprintf(stdout, "NOT linearizable: %d ops (%d keys, %d clients); visualization: %s\n", len(ops), c.o.checkKeys, c.o.checkClients, c.o.checkHTML)
		return fmt.Errorf("check: history of %d ops is not linearizable; see %s", len(ops), c.o.checkHTML)
	}
	fmt.Fprintf(stdout, "linearizability unknown: %d ops not checked within %v\n", len(ops), c.o.checkTimeout)
	return fmt.Errorf("check: %d ops not checked within %v (-check-timeout)", len(ops), c.o.checkTimeout)
}
