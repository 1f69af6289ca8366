package stats

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMovingMeanFollowsItsSamples: the average moves an eighth of the way
// to each sample and converges on a steady one, also under concurrent
// adds (which -race checks for unsynchronized access).
func TestMovingMeanFollowsItsSamples(t *testing.T) {
	var m movingMean
	m.add(800 * time.Millisecond)
	require.Equal(t, 100*time.Millisecond, m.get())
	m.add(100 * time.Millisecond)
	require.Equal(t, 100*time.Millisecond, m.get())
	for range 200 {
		m.add(time.Second)
	}
	require.InDelta(t, float64(time.Second), float64(m.get()), float64(time.Millisecond))

	var c movingMean
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				c.add(time.Hour)
			}
		}()
	}
	wg.Wait()
	require.InDelta(t, float64(time.Hour), float64(c.get()), float64(time.Second))
}
