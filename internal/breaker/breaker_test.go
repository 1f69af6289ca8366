package breaker

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock is a settable time source.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestBreakerCircuit(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	h := New(3, 100*time.Millisecond, 350*time.Millisecond)
	h.now = clock.now
	boom := errors.New("connection refused")

	call := func(v Verdict) {
		t.Helper()
		probe, err := h.Admit()
		require.NoError(t, err)
		h.Report(probe, v, boom)
	}
	// Two failures, a success, two more: never three in a row.
	call(Failed)
	call(Failed)
	call(Succeeded)
	call(Failed)
	call(Failed)
	require.True(t, h.State().Healthy)
	// Neutral outcomes (the caller cancelled) neither count nor reset.
	call(Neutral)
	require.Equal(t, 2, h.State().Failures)
	call(Failed)
	s := h.State()
	require.False(t, s.Healthy)
	require.Equal(t, 100*time.Millisecond, s.RetryIn)

	// Unhealthy: calls fail at once, saying why and when the next probe is.
	_, err := h.Admit()
	require.ErrorContains(t, err, "marked unhealthy after 3 consecutive failures (last: connection refused); next probe in 100ms")

	// After the cooldown one probe goes through; others still fail fast.
	clock.t = clock.t.Add(100 * time.Millisecond)
	probe, err := h.Admit()
	require.NoError(t, err)
	require.True(t, probe)
	_, err = h.Admit()
	require.Error(t, err, "only one probe at a time")

	// A failed probe doubles the cooldown: 200ms, then 350ms (the cap).
	h.Report(true, Failed, boom)
	require.Equal(t, 200*time.Millisecond, h.State().RetryIn)
	clock.t = clock.t.Add(200 * time.Millisecond)
	probe, err = h.Admit()
	require.NoError(t, err)
	h.Report(probe, Failed, boom)
	require.Equal(t, 350*time.Millisecond, h.State().RetryIn)

	// A probe whose caller gave up says nothing: the next call may probe.
	clock.t = clock.t.Add(350 * time.Millisecond)
	probe, err = h.Admit()
	require.NoError(t, err)
	h.Report(probe, Neutral, nil)
	probe, err = h.Admit()
	require.NoError(t, err)
	require.True(t, probe)

	// A successful probe makes the server healthy, with the base cooldown.
	h.Report(probe, Succeeded, nil)
	s = h.State()
	require.True(t, s.Healthy)
	require.Zero(t, s.Failures)
	call(Failed)
	call(Failed)
	call(Failed)
	require.Equal(t, 100*time.Millisecond, h.State().RetryIn)
}
