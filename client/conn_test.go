package client

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPickKeepsALoneCallerOnTheFirstConnection: with no call in flight
// the first connection, every time; with calls in flight, each in turn.
func TestPickKeepsALoneCallerOnTheFirstConnection(t *testing.T) {
	s := newServerConn("127.0.0.1:1", &Config{ConnsPerServer: 3}, &traffic{})
	for range 5 {
		require.Equal(t, 0, s.pick())
	}
	s.busy.Store(1)
	seen := map[int]int{}
	for range 30 {
		seen[s.pick()]++
	}
	require.Equal(t, map[int]int{0: 10, 1: 10, 2: 10}, seen)
}
