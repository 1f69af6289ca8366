package workload

import (
	"fmt"
	"math"
	"sync"
)

// Zipfian draws integers in [0, n) where i has probability proportional to
// 1/(i+1)^theta: 0 is the most popular, 1 the next, and so on. It uses the
// method of Gray et al., "Quickly Generating Billion-Record Synthetic
// Databases" (SIGMOD 1994), the one YCSB's ZipfianGenerator uses: constant
// time per draw after computing zeta(n, theta) once.
//
// A Zipfian is not safe for concurrent use; give each goroutine its own.
type Zipfian struct {
	rng   *Xorshift64
	n     float64
	theta float64
	alpha float64 // 1 / (1 - theta)
	zetan float64 // sum over i in [1, n] of 1/i^theta
	eta   float64
	half  float64 // 1 + 0.5^theta: below it, u*zetan picks item 1
	// cells[c] is the draw for every u whose top cellBits bits are c, or
	// mixed where the draws in that cell differ (shared, read-only).
	cells []uint64
}

// cellBits is how finely Next's lookup table cuts [0, 1): into 65,536
// cells. With a million items and theta 0.99, about half of all draws
// fall in a cell that holds one item, and skip the power (math.Pow was a
// quarter of the load client's CPU).
const cellBits = 16

// mixed marks a cell whose draws differ.
const mixed = math.MaxUint64

// NewZipfian returns a generator over [0, n) with skew theta in [0, 1),
// drawing its randomness from rng.
func NewZipfian(n uint64, theta float64, rng *Xorshift64) (*Zipfian, error) {
	if n < 2 {
		return nil, fmt.Errorf("workload: zipfian needs at least 2 items, got %d", n)
	}
	if theta < 0 || theta >= 1 || math.IsNaN(theta) {
		return nil, fmt.Errorf("workload: zipfian theta %v is outside [0, 1)", theta)
	}
	zetan := zeta(n, theta)
	zeta2 := 1 + math.Pow(0.5, theta)
	z := &Zipfian{
		rng:   rng,
		n:     float64(n),
		theta: theta,
		alpha: 1 / (1 - theta),
		zetan: zetan,
		eta:   (1 - math.Pow(2/float64(n), 1-theta)) / (1 - zeta2/zetan),
		half:  zeta2,
	}
	z.cells = cellsOf(z, n)
	return z, nil
}

// Next returns the next draw: at(u) for a uniform u in [0, 1), looked up
// where u's cell holds one item.
func (z *Zipfian) Next() uint64 {
	bits := z.rng.bits53()
	if v := z.cells[bits>>(53-cellBits)]; v != mixed {
		return v
	}
	return z.at(unit(bits))
}

// at is Gray et al.'s formula: the item that u in [0, 1) draws. It does
// not decrease as u grows.
func (z *Zipfian) at(u float64) uint64 {
	uz := u * z.zetan
	if uz < 1 {
		return 0
	}
	if uz < z.half {
		return 1
	}
	v := uint64(z.power(u))
	if v >= uint64(z.n) { // guard against rounding at u close to 1
		v = uint64(z.n) - 1
	}
	return v
}

// power is the formula's value at u, for u past the two most popular
// items; its integer part is the draw.
func (z *Zipfian) power(u float64) float64 {
	return z.n * math.Pow(z.eta*u-z.eta+1, z.alpha)
}

// nearEdge says whether the formula's value at u lies within a billionth
// of itself of an item's edge (an integer). The value grows with u, but
// math.Pow is not correctly rounded, so near an edge a larger u might draw
// the smaller item; a cell with an end there is not looked up.
func (z *Zipfian) nearEdge(u float64) bool {
	if u*z.zetan < z.half {
		return false
	}
	x := z.power(u)
	_, frac := math.Modf(x)
	return min(frac, 1-frac) < 1e-9*x
}

// Probability returns the exact probability of drawing i.
func (z *Zipfian) Probability(i uint64) float64 {
	return 1 / math.Pow(float64(i+1), z.theta) / z.zetan
}

// cellsOf returns the lookup table of z, over n items: since at does not
// decrease as u grows, a cell whose first and last u draw the same item,
// neither of them near an item's edge, draws it for every u in between.
// Generators with the same n and theta share one.
func cellsOf(z *Zipfian, n uint64) []uint64 {
	zetaMu.Lock()
	defer zetaMu.Unlock()
	k := zetaKey{n, z.theta}
	if c, ok := cellCache[k]; ok {
		return c
	}
	const span = 1 << (53 - cellBits) // values of the 53 bits in a cell
	cells := make([]uint64, 1<<cellBits)
	for c := range cells {
		first, last := unit(uint64(c)*span), unit(uint64(c+1)*span-1)
		if lo, hi := z.at(first), z.at(last); lo == hi && !z.nearEdge(first) && !z.nearEdge(last) {
			cells[c] = lo
		} else {
			cells[c] = mixed
		}
	}
	cellCache[k] = cells
	return cells
}

type zetaKey struct {
	n     uint64
	theta float64
}

var (
	zetaMu    sync.Mutex
	zetaCache = map[zetaKey]float64{}
	cellCache = map[zetaKey][]uint64{}
)

// zeta computes sum over i in [1, n] of 1/i^theta, once per (n, theta): a
// load generator makes one generator per goroutine and the sum over
// 1,000,000 terms takes tens of milliseconds.
func zeta(n uint64, theta float64) float64 {
	zetaMu.Lock()
	defer zetaMu.Unlock()
	k := zetaKey{n, theta}
	if z, ok := zetaCache[k]; ok {
		return z
	}
	var sum float64
	for i := uint64(1); i <= n; i++ {
		sum += 1 / math.Pow(float64(i), theta)
	}
	zetaCache[k] = sum
	return sum
}

// Xorshift64 is a small, fast pseudo-random generator (Marsaglia's
// xorshift, 13/7/17). Not safe for concurrent use.
type Xorshift64 struct {
	state uint64
}

// NewXorshift64 seeds a generator; a zero seed is replaced by 1, since zero
// is the one state the generator cannot leave.
func NewXorshift64(seed uint64) *Xorshift64 {
	if seed == 0 {
		seed = 1
	}
	return &Xorshift64{state: seed}
}

// Uint64 returns the next 64 random bits.
func (x *Xorshift64) Uint64() uint64 {
	s := x.state
	s ^= s << 13
	s ^= s >> 7
	s ^= s << 17
	x.state = s
	return s
}

// Float64 returns a uniform draw from [0, 1).
func (x *Xorshift64) Float64() float64 { return unit(x.bits53()) }

// bits53 returns the next 53 random bits, from which Float64 makes its
// draw.
func (x *Xorshift64) bits53() uint64 { return x.Uint64() >> 11 }

// unit returns the draw in [0, 1) that 53 random bits stand for.
func unit(bits uint64) float64 { return float64(bits) / (1 << 53) }
