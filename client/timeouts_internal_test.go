package client

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCoarseTimeout: a context that cannot end gets the shared one, which
// ends between 15/16 of d and d from now and is shared until it is nearer
// than that; an earlier deadline of the caller's is kept; a caller's
// context that can be canceled still ends the call; and a shared context
// passed back in gets the shared context of a shorter timeout alone.
func TestCoarseTimeout(t *testing.T) {
	const d = 800 * time.Millisecond
	ct := &coarseTimeout{d: d}
	defer ct.stop()
	inBounds := func(ctx context.Context, from time.Time) {
		t.Helper()
		dl, ok := ctx.Deadline()
		require.True(t, ok, "no deadline")
		require.False(t, dl.Before(from.Add(d-d/16)), "deadline %v before 15/16 of d", dl.Sub(from))
		require.False(t, dl.After(time.Now().Add(d)), "deadline %v past d", dl.Sub(from))
	}

	start := time.Now()
	a, cancel := ct.within(context.Background())
	cancel()
	inBounds(a, start)
	b, _ := ct.within(context.Background())
	require.Equal(t, a, b, "a second call at once did not share the context")
	time.Sleep(d / 8)
	start = time.Now()
	c, _ := ct.within(context.Background())
	require.NotEqual(t, a, c, "a context nearer than 15/16 of d was shared")
	inBounds(c, start)
	require.NoError(t, a.Err(), "an earlier shared context ended before its deadline")

	soon, cancelSoon := context.WithTimeout(context.Background(), d/4)
	defer cancelSoon()
	got, _ := ct.within(soon)
	require.Equal(t, soon, got, "the caller's earlier deadline was not kept")

	parent, cancelParent := context.WithCancel(context.Background())
	start = time.Now()
	got, cancelGot := ct.within(parent)
	defer cancelGot()
	inBounds(got, start)
	cancelParent()
	require.ErrorIs(t, got.Err(), context.Canceled, "the caller's cancel did not reach the call")

	shorter := &coarseTimeout{d: d / 2}
	defer shorter.stop()
	got, _ = shorter.within(c)
	want, _ := shorter.within(context.Background())
	require.Equal(t, want, got, "a shared context of a longer timeout did not give way to the shorter's")

	time.Sleep(d)
	require.ErrorIs(t, a.Err(), context.DeadlineExceeded, "the shared context did not end at its deadline")
}
