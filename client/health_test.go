package client

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock is a settable time source.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestHealthCircuit(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	h := newHealth(3, 100*time.Millisecond, 350*time.Millisecond)
	h.now = clock.now
	boom := errors.New("connection refused")

	call := func(v verdict) {
		t.Helper()
		probe, err := h.admit()
		require.NoError(t, err)
		h.report(probe, v, boom)
	}
	// Two failures, a success, two more: never three in a row.
	call(failed)
	call(failed)
	call(succeeded)
	call(failed)
	call(failed)
	require.True(t, h.snapshot("s").Healthy)
	// Neutral outcomes (the caller cancelled) neither count nor reset.
	call(neutral)
	require.Equal(t, 2, h.snapshot("s").Failures)
	call(failed)
	s := h.snapshot("s")
	require.False(t, s.Healthy)
	require.Equal(t, 100*time.Millisecond, s.RetryIn)

	// Unhealthy: calls fail at once, saying why and when the next probe is.
	_, err := h.admit()
	require.ErrorContains(t, err, "marked unhealthy after 3 consecutive failures (last: connection refused); next probe in 100ms")

	// After the cooldown one probe goes through; others still fail fast.
	clock.t = clock.t.Add(100 * time.Millisecond)
	probe, err := h.admit()
	require.NoError(t, err)
	require.True(t, probe)
	_, err = h.admit()
	require.Error(t, err, "only one probe at a time")

	// A failed probe doubles the cooldown: 200ms, then 350ms (the cap).
	h.report(true, failed, boom)
	require.Equal(t, 200*time.Millisecond, h.snapshot("s").RetryIn)
	clock.t = clock.t.Add(200 * time.Millisecond)
	probe, err = h.admit()
	require.NoError(t, err)
	h.report(probe, failed, boom)
	require.Equal(t, 350*time.Millisecond, h.snapshot("s").RetryIn)

	// A probe whose caller gave up says nothing: the next call may probe.
	clock.t = clock.t.Add(350 * time.Millisecond)
	probe, err = h.admit()
	require.NoError(t, err)
	h.report(probe, neutral, nil)
	probe, err = h.admit()
	require.NoError(t, err)
	require.True(t, probe)

	// A successful probe makes the server healthy, with the base cooldown.
	h.report(probe, succeeded, nil)
	s = h.snapshot("s")
	require.True(t, s.Healthy)
	require.Zero(t, s.Failures)
	call(failed)
	call(failed)
	call(failed)
	require.Equal(t, 100*time.Millisecond, h.snapshot("s").RetryIn)
}
