package main

import (
	"errors"
	"fmt"
	"io"
	"runtime/pprof"
	"time"
)

// defaultStopWithin bounds how long a server takes to stop once signalled
// (or once its listener fails); a second signal stops it at once.
// Closing waits for the requests in hand and then for each shard's Raft
// group; if something holds it past this (it happened once with a full
// disk, and was never found), the server says what every goroutine was
// doing and exits without closing, as a crash would. Nothing is lost by
// that: an acknowledged write is in a majority's synced log.
const defaultStopWithin = 30 * time.Second

// errStopTimedOut is a close that did not end within its bound.
var errStopTimedOut = errors.New("did not stop in time")

// closeWithin runs closeFn and returns what it returns, or, once within
// has passed first (0: never), writes every goroutine's stack to w and
// returns errStopTimedOut, leaving closeFn to the process's exit.
func closeWithin(closeFn func() error, within time.Duration, w io.Writer) error {
	done := make(chan error, 1)
	go func() { done <- closeFn() }()
	if within <= 0 {
		return <-done
	}
	select {
	case err := <-done:
		return err
	case <-time.After(within):
	}
	fmt.Fprintf(w, "kvsserver: still closing %v after the signal; every goroutine follows, then the server exits without closing\n", within)
	_ = pprof.Lookup("goroutine").WriteTo(w, 2)
	return fmt.Errorf("%w: still closing after %v (the goroutines are in the log above)", errStopTimedOut, within)
}
