// Package latency records durations in a fixed-size log-linear histogram
// and reads percentiles off it: 16 sub-buckets per power of two, so a
// percentile is exact to within about 6%, in 8 KiB per histogram (1,024
// counters) whatever the number of samples.
//
// A Histogram is not safe for concurrent use: give each goroutine its own
// and Merge them.
package latency

import (
	"math/bits"
	"time"
)

const subBits = 4 // 16 sub-buckets per power of two

// Histogram counts durations from 1 ns to about 292 years.
type Histogram struct {
	counts [64 << subBits]uint64
	n      uint64
	max    time.Duration
}

func bucket(d time.Duration) int {
	v := uint64(max(d, 1))
	exp := bits.Len64(v) - 1 // v is in [2^exp, 2^(exp+1))
	if exp < subBits {
		return int(v)
	}
	sub := (v >> (exp - subBits)) & (1<<subBits - 1)
	return (exp-subBits+1)<<subBits | int(sub)
}

// bucketUpper returns the largest duration that falls in bucket b.
func bucketUpper(b int) time.Duration {
	if b < 1<<subBits {
		return time.Duration(b)
	}
	exp := b>>subBits + subBits - 1
	sub := uint64(b & (1<<subBits - 1))
	lo := uint64(1)<<exp | sub<<(exp-subBits)
	return time.Duration(lo + uint64(1)<<(exp-subBits) - 1)
}

// Record adds one duration.
func (h *Histogram) Record(d time.Duration) {
	h.counts[bucket(d)]++
	h.n++
	h.max = max(h.max, d)
}

// Merge adds every sample of o.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// Count returns the number of samples.
func (h *Histogram) Count() uint64 { return h.n }

// Max returns the largest sample.
func (h *Histogram) Max() time.Duration { return h.max }

// Quantile returns an upper bound, within one bucket, of the q-quantile
// (q in [0, 1]); zero when there are no samples.
func (h *Histogram) Quantile(q float64) time.Duration {
	_, hi := h.QuantileRange(q)
	return hi
}

// QuantileRange returns the bounds of the bucket that holds the
// q-quantile: it is above lo and at most hi (lo is 0 for the first
// bucket, and both are 0 when there are no samples). A check that the
// quantile is under a bound fails for certain only when lo is not.
func (h *Histogram) QuantileRange(q float64) (lo, hi time.Duration) {
	if h.n == 0 {
		return 0, 0
	}
	rank := uint64(q*float64(h.n) + 0.5)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for b, c := range h.counts {
		seen += c
		if seen >= rank {
			if b > 0 {
				lo = bucketUpper(b - 1)
			}
			return min(lo, h.max), min(bucketUpper(b), h.max)
		}
	}
	return h.max, h.max
}
