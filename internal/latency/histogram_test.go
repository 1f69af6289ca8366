package latency

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBucketsCoverEveryDuration(t *testing.T) {
	for _, d := range []time.Duration{1, 2, 15, 16, 17, 1000, 123456789, time.Hour} {
		b := bucket(d)
		require.GreaterOrEqual(t, bucketUpper(b), d, "duration %d in bucket %d", d, b)
		if b > 0 {
			require.Less(t, bucketUpper(b-1), d, "duration %d above the previous bucket", d)
		}
	}
}

func TestQuantilesWithinBucketPrecision(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var h, a, b Histogram
	var all []time.Duration
	for i := range 100_000 {
		d := time.Duration(rng.ExpFloat64() * float64(time.Millisecond))
		all = append(all, d)
		h.Record(d)
		if i%2 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	a.Merge(&b)
	slices.Sort(all)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		exact := all[int(q*float64(len(all)))-1]
		got := h.Quantile(q)
		require.InEpsilon(t, float64(exact), float64(got), 0.07, "q=%v", q)
		require.Equal(t, got, a.Quantile(q), "merged histogram agrees")
		lo, hi := h.QuantileRange(q)
		require.Equal(t, got, hi)
		require.Less(t, lo, exact, "q=%v: the quantile is above the range's low end", q)
		require.GreaterOrEqual(t, hi, exact, "q=%v", q)
		require.InEpsilon(t, float64(hi), float64(lo), 0.07, "q=%v: one bucket apart", q)
	}
	require.Equal(t, all[len(all)-1], h.Max())
	require.Equal(t, uint64(100_000), a.Count())
	var empty Histogram
	require.Zero(t, empty.Quantile(0.5))
}
