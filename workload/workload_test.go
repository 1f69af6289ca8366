package workload

import (
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/wire"
)

func TestZipfianMatchesExactProbabilities(t *testing.T) {
	const n, draws = 1000, 2_000_000
	for _, theta := range []float64{0, 0.5, 0.99} {
		t.Run("theta"+strconv.FormatFloat(theta, 'f', -1, 64), func(t *testing.T) {
			z, err := NewZipfian(n, theta, NewXorshift64(42))
			require.NoError(t, err)
			counts := make([]int, n)
			for range draws {
				v := z.Next()
				require.Less(t, v, uint64(n))
				counts[v]++
			}
			// Gray et al.'s method is exact for the two most popular items and
			// approximates the rest: items 0 and 1 must be within 5 standard
			// deviations of their exact expectation, the top ten's total mass
			// within 6% of exact, and the whole distribution close in total
			// variation (2M draws over 1000 items leave ~0.01 of sampling noise).
			for i := range uint64(2) {
				p := z.Probability(i)
				want := p * draws
				sd := math.Sqrt(draws * p * (1 - p))
				require.InDelta(t, want, float64(counts[i]), 5*sd, "item %d", i)
			}
			var head, exactHead float64
			for i := range 10 {
				head += float64(counts[i]) / draws
				exactHead += z.Probability(uint64(i))
			}
			require.InEpsilon(t, exactHead, head, 0.06)
			var tv float64
			for i, c := range counts {
				tv += math.Abs(float64(c)/draws - z.Probability(uint64(i)))
			}
			require.Less(t, tv/2, 0.025)
		})
	}
}

// TestZipfianTableDrawsAsTheFormula: Next, which looks most draws up in
// a table of cells, draws what Gray et al.'s formula draws from the same
// random bits, and every cell the table holds one item for draws that
// item wherever in the cell u falls; generators with the same n and theta
// share the table.
func TestZipfianTableDrawsAsTheFormula(t *testing.T) {
	for _, c := range []struct {
		n     uint64
		theta float64
	}{{DefaultRecords, DefaultTheta}, {1000, 0.5}, {10, 0}, {3, 0.99}} {
		z, err := NewZipfian(c.n, c.theta, NewXorshift64(9))
		require.NoError(t, err)
		ref, err := NewZipfian(c.n, c.theta, NewXorshift64(9))
		require.NoError(t, err)
		looked := 0
		for i := range 1_000_000 {
			got, want := z.Next(), ref.at(ref.rng.Float64())
			if got != want {
				t.Fatalf("n %d theta %v draw %d: table says %d, formula %d", c.n, c.theta, i, got, want)
			}
		}
		rng := NewXorshift64(3)
		const span = 1 << (53 - cellBits)
		for cell, v := range z.cells {
			if v == mixed {
				continue
			}
			looked++
			first := uint64(cell) * span
			for _, off := range []uint64{0, span - 1, span / 2, rng.Uint64() % span} {
				require.Equal(t, v, z.at(unit(first+off)), "n %d theta %v cell %d", c.n, c.theta, cell)
			}
		}
		require.Positive(t, looked, "no cell holds one item")
		require.Same(t, &z.cells[0], &ref.cells[0], "generators with the same n and theta share a table")
	}
}

func TestZipfianSkewAt099(t *testing.T) {
	// The standard run's keys: with theta 0.99 over 1,000,000 records the
	// most popular key takes a few percent of all draws.
	z, err := NewZipfian(DefaultRecords, 0.99, NewXorshift64(7))
	require.NoError(t, err)
	zeros := 0
	const draws = 500_000
	for range draws {
		if z.Next() == 0 {
			zeros++
		}
	}
	require.InDelta(t, z.Probability(0), float64(zeros)/draws, 0.005)
	require.Greater(t, z.Probability(0), 0.03)
}

func TestZipfianRejectsBadParameters(t *testing.T) {
	for name, c := range map[string]struct {
		n     uint64
		theta float64
	}{
		"theta one":      {100, 1},
		"theta negative": {100, -0.1},
		"theta NaN":      {100, math.NaN()},
		"one item":       {1, 0.5},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewZipfian(c.n, c.theta, NewXorshift64(1))
			require.Error(t, err)
		})
	}
}

func TestMixReadFractions(t *testing.T) {
	cases := []struct {
		name string
		want float64
	}{{"YCSB-A", 0.5}, {"YCSB-B", 0.95}, {"YCSB-C", 1}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := New(Config{Name: c.name, Theta: 0.99, Records: 1000, Seed: 3})
			require.NoError(t, err)
			reads := 0
			const draws = 200_000
			for range draws {
				op := g.Next()
				require.Equal(t, strconv.FormatUint(op.Record, 10), Key(op.Record))
				require.Equal(t, Key(op.Record), string(AppendKey([]byte("x"), op.Record)[1:]))
				if op.Read {
					reads++
				}
			}
			require.InDelta(t, c.want, float64(reads)/draws, 0.005)
		})
	}
	_, err := New(Config{Name: "YCSB-Z"})
	require.ErrorContains(t, err, "unknown workload")
}

func TestSameSeedSameOps(t *testing.T) {
	a, err := New(Config{Theta: 0.99, Records: 1000, Seed: 11})
	require.NoError(t, err)
	b, err := New(Config{Theta: 0.99, Records: 1000, Seed: 11})
	require.NoError(t, err)
	c, err := New(Config{Theta: 0.99, Records: 1000, Seed: 12})
	require.NoError(t, err)
	same, differ := true, false
	for range 1000 {
		x, y, z := a.Next(), b.Next(), c.Next()
		same = same && x == y
		differ = differ || x != z
	}
	require.True(t, same)
	require.True(t, differ)
}

func TestValue(t *testing.T) {
	v := Value(128, 12345)
	require.Len(t, v, 128)
	require.NotEqual(t, v, Value(128, 12346))
}

func TestNextBatch(t *testing.T) {
	g, err := New(Config{Name: "YCSB-A", Theta: 0.99, Records: 1000, Seed: 9})
	require.NoError(t, err)
	twin, err := New(Config{Name: "YCSB-A", Theta: 0.99, Records: 1000, Seed: 9})
	require.NoError(t, err)
	ops := make([]wire.Op, 500)
	keys := g.NextBatch(ops, nil, func(j int) string { return "v" + strconv.Itoa(j) })
	for j, op := range ops {
		want := twin.Next()
		require.Equal(t, Key(want.Record), op.Key)
		if want.Read {
			require.Equal(t, wire.Op{Code: wire.OpGet, Key: op.Key}, op)
		} else {
			require.Equal(t, wire.Op{Code: wire.OpPut, Key: op.Key, Value: "v" + strconv.Itoa(j)}, op)
		}
	}
	// The next batch reuses the buffer: no allocation.
	allocs := testing.AllocsPerRun(10, func() { keys = g.NextBatch(ops, keys, func(int) string { return "v" }) })
	require.Zero(t, allocs)
}
