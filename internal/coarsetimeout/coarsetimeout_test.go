package coarsetimeout

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// inner is the context a Timeout's context wraps, to compare.
func inner(ctx context.Context) context.Context {
	if c, ok := ctx.(*shared); ok {
		return c.Context
	}
	return ctx
}

type key struct{}

// TestWithin: context.Background gets the shared context, which ends
// between 15/16 of d and d from now and is shared until it is nearer than
// that; an earlier deadline of the caller's is kept; calls under one
// caller's context share one too, which the caller's cancel ends and
// which carries its values; and a shared context passed back in is
// bounded by a shorter timeout as its caller's context would be.
func TestWithin(t *testing.T) {
	const d = 1600 * time.Millisecond
	ct := New(d)
	inBounds := func(ctx context.Context, from time.Time) {
		t.Helper()
		dl, ok := ctx.Deadline()
		require.True(t, ok, "no deadline")
		require.False(t, dl.Before(from.Add(d-d/16)), "deadline %v before 15/16 of d", dl.Sub(from))
		require.False(t, dl.After(time.Now().Add(d)), "deadline %v past d", dl.Sub(from))
	}

	start := time.Now()
	a, done := ct.Within(context.Background())
	done()
	inBounds(a, start)
	b, _ := ct.Within(context.Background())
	require.Equal(t, inner(a), inner(b), "a second call at once did not share the context")
	time.Sleep(d / 8)
	start = time.Now()
	c, _ := ct.Within(context.Background())
	require.NotEqual(t, inner(a), inner(c), "a context nearer than 15/16 of d was shared")
	inBounds(c, start)
	require.NoError(t, a.Err(), "an earlier shared context held by a call ended before its deadline")

	soon, cancelSoon := context.WithTimeout(context.Background(), d/4)
	defer cancelSoon()
	got, _ := ct.Within(soon)
	require.Equal(t, soon, got, "the caller's earlier deadline was not kept")

	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	start = time.Now()
	p1, _ := ct.Within(parent)
	p2, _ := ct.Within(parent)
	inBounds(p1, start)
	require.Equal(t, inner(p1), inner(p2), "calls under one caller's context did not share")
	require.Equal(t, "v", p1.Value(key{}), "the caller's values were lost")
	require.NotEqual(t, inner(c), inner(p1), "a caller's context shared context.Background's")
	other, cancelOther := context.WithCancel(context.Background())
	defer cancelOther()
	o, _ := ct.Within(other)
	require.NotEqual(t, inner(p1), inner(o), "two callers' contexts shared one")
	cancelParent()
	require.ErrorIs(t, p1.Err(), context.Canceled, "the caller's cancel did not reach the call")
	require.NoError(t, o.Err(), "one caller's cancel ended another's calls")

	values, _ := ct.Within(context.WithValue(context.Background(), key{}, "w"))
	require.Equal(t, "w", values.Value(key{}), "the values of a context that cannot end were lost")

	shorter := New(d / 2)
	got, _ = shorter.Within(o)
	want, _ := shorter.Within(other)
	require.Equal(t, inner(want), inner(got), "a shared context of a longer timeout was not bounded as its caller's")
	cancelOther()
	require.ErrorIs(t, got.Err(), context.Canceled, "the caller's cancel did not reach the shorter bound")

	time.Sleep(d)
	require.ErrorIs(t, a.Err(), context.DeadlineExceeded, "the shared context did not end at its deadline")
}

// TestWithinReleases: a shared context no longer handed out is canceled
// once the last call holding it is done, and not before (a done function
// called twice counts once), so that calls under ever new contexts do not
// leave a timer each behind.
func TestWithinReleases(t *testing.T) {
	ct := New(time.Minute)
	p1, cancel1 := context.WithCancel(context.Background())
	defer cancel1()
	p2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	a, doneA := ct.Within(p1)
	b, doneB := ct.Within(p1)
	c, doneC := ct.Within(p2) // p1's is no longer handed out
	doneA()
	doneA()
	require.NoError(t, b.Err(), "canceled while a call still held it")
	doneB()
	require.ErrorIs(t, a.Err(), context.Canceled, "not canceled once its last call was done")
	doneC()
	require.NoError(t, c.Err(), "the context handed out was canceled when its call was done")
	d, doneD := ct.Within(p2)
	require.Equal(t, inner(c), inner(d))
	doneD()
}
