package main

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// heldClose stands for a close that never ends; its name is what the
// goroutine dump must show.
func heldClose(release <-chan struct{}) error {
	<-release
	return nil
}

// TestCloseWithinGivesUpOnAHeldClose: a close held past its bound is left
// behind, with every goroutine's stack written (the held one among them),
// and the server's run ends with an error.
func TestCloseWithinGivesUpOnAHeldClose(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var dump bytes.Buffer
	got := make(chan error, 1)
	start := time.Now()
	go func() { got <- closeWithin(func() error { return heldClose(release) }, 200*time.Millisecond, &dump) }()
	select {
	case err := <-got:
		require.ErrorIs(t, err, errStopTimedOut)
		require.Less(t, time.Since(start), 3*time.Second)
	case <-time.After(5 * time.Second):
		t.Fatal("closeWithin waited for a held close")
	}
	require.Contains(t, dump.String(), "goroutine ")
	require.Contains(t, dump.String(), "heldClose", "the held goroutine is in the dump")
}

// TestCloseWithinPassesAPromptClose: a close that ends in time returns
// its own error and writes nothing; with no bound, a slow close is
// waited for.
func TestCloseWithinPassesAPromptClose(t *testing.T) {
	var dump bytes.Buffer
	closeErr := errors.New("closed with an error")
	require.ErrorIs(t, closeWithin(func() error { return closeErr }, time.Second, &dump), closeErr)
	require.NoError(t, closeWithin(func() error { time.Sleep(300 * time.Millisecond); return nil }, 0, &dump))
	require.Empty(t, dump.String())
}
