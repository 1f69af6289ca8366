package ring

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/require"
)

// TestOwnerByHand uses a hash that reads numbers off the strings, so the
// expected owner of every key can be worked out on paper.
func TestOwnerByHand(t *testing.T) {
	hash := func(s string) uint64 {
		// "a#0" -> 10, "a#1" -> 11, "b#0" -> 20, ...; keys are numbers.
		if name, v, ok := strings.Cut(s, "#"); ok {
			n, _ := strconv.Atoi(v)
			return uint64(10*(int(name[0]-'a')+1) + n)
		}
		n, _ := strconv.Atoi(s)
		return uint64(n)
	}
	r, err := newWithHash([]string{"a", "b", "c"}, 2, hash)
	require.NoError(t, err)
	// Points: a at 10, 11; b at 20, 21; c at 30, 31.
	cases := []struct {
		key  string
		want string
	}{
		{"0", "a"}, {"10", "a"}, {"11", "a"}, {"12", "b"}, {"21", "b"},
		{"22", "c"}, {"31", "c"}, {"32", "a"}, {"1000", "a"},
	}
	for _, c := range cases {
		t.Run("key"+c.key, func(t *testing.T) {
			require.Equal(t, c.want, r.Nodes()[r.Owner(c.key)])
		})
	}
}

// TestOwnerMatchesSearch: the sliced lookup names the same owner as a
// binary search over the whole circle, for positions on, beside and
// between the points, at the slices' edges, at both ends of the circle and
// at random, and rings of 1 to 8 servers.
func TestOwnerMatchesSearch(t *testing.T) {
	// Servers' points hash as usual; a key that is a number is its own
	// position, so the test can aim at any position it likes.
	hash := func(s string) uint64 {
		if n, err := strconv.ParseUint(s, 10, 64); err == nil {
			return n
		}
		return xxhash.Sum64String(s)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for servers := 1; servers <= 8; servers++ {
		nodes := make([]string, servers)
		for i := range nodes {
			nodes[i] = fmt.Sprintf("10.0.0.%d:8080", i+1)
		}
		r, err := newWithHash(nodes, 0, hash)
		require.NoError(t, err)
		search := func(h uint64) int {
			i, _ := slices.BinarySearch(r.points, h)
			return int(r.owners[i%len(r.points)])
		}
		positions := []uint64{0, 1, math.MaxUint64, math.MaxUint64 - 1}
		for _, p := range r.points {
			positions = append(positions, p-1, p, p+1)
		}
		for b := range uint64(len(r.first)) {
			start := b << r.shift
			positions = append(positions, start, start-1)
		}
		for range 100_000 {
			positions = append(positions, rng.Uint64())
		}
		for _, h := range positions {
			if got, want := r.Owner(strconv.FormatUint(h, 10)), search(h); got != want {
				t.Fatalf("%d servers, position %d: owner %d, binary search says %d", servers, h, got, want)
			}
		}
	}
}

func TestNewRejectsBadMembership(t *testing.T) {
	cases := map[string][]string{
		"no servers":   nil,
		"empty name":   {"a", ""},
		"listed twice": {"a", "b", "a"},
	}
	for name, nodes := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := New(nodes, 0)
			require.Error(t, err)
		})
	}
	_, err := New([]string{"a"}, -1)
	require.Error(t, err)
}

func serverNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("127.0.0.%d:%d", i+1, 8080+i)
	}
	return names
}

func shares(r *Ring, keys int) []int {
	counts := make([]int, r.Len())
	for k := range keys {
		counts[r.Owner(strconv.Itoa(k))]++
	}
	return counts
}

// TestBalance: with the default virtual node count, every server's share
// of 1,000,000 keys is within 10% of an even share, for 2 to 8 servers,
// both for loopback addresses and for CloudLab-style host names.
func TestBalance(t *testing.T) {
	const keys = 1_000_000
	namings := map[string]func(int) []string{
		"loopback": serverNames,
		"cloudlab": func(n int) []string {
			names := make([]string, n)
			for i := range names {
				names[i] = fmt.Sprintf("node%d:8080", i)
			}
			return names
		},
	}
	for naming, names := range namings {
		for n := 2; n <= 8; n++ {
			t.Run(fmt.Sprintf("%s/%dservers", naming, n), func(t *testing.T) {
				r, err := New(names(n), 0)
				require.NoError(t, err)
				even := float64(keys) / float64(n)
				for i, c := range shares(r, keys) {
					require.InDelta(t, even, float64(c), 0.10*even, "server %d owns %d keys, even is %.0f", i, c, even)
				}
			})
		}
	}
}

// TestAddingServerMovesAboutOneNth: going from N to N+1 servers moves about
// 1/(N+1) of the keys, and every moved key moves to the new server.
func TestAddingServerMovesAboutOneNth(t *testing.T) {
	const keys = 200_000
	for n := 2; n <= 7; n++ {
		t.Run(fmt.Sprintf("%dto%d", n, n+1), func(t *testing.T) {
			names := serverNames(n + 1)
			before, err := New(names[:n], 0)
			require.NoError(t, err)
			after, err := New(names, 0)
			require.NoError(t, err)
			moved := 0
			for k := range keys {
				key := strconv.Itoa(k)
				from, to := before.Nodes()[before.Owner(key)], after.Nodes()[after.Owner(key)]
				if from != to {
					moved++
					require.Equal(t, names[n], to, "key %s moved between old servers", key)
				}
			}
			want := float64(keys) / float64(n+1)
			require.InDelta(t, want, float64(moved), 0.15*want)
		})
	}
}

func TestIDIgnoresOrderButNotMembership(t *testing.T) {
	a, err := New([]string{"x", "y", "z"}, 0)
	require.NoError(t, err)
	b, err := New([]string{"z", "x", "y"}, 0)
	require.NoError(t, err)
	c, err := New([]string{"x", "y"}, 0)
	require.NoError(t, err)
	d, err := New([]string{"x", "y", "z"}, 64)
	require.NoError(t, err)
	require.Equal(t, a.ID(), b.ID())
	require.NotEqual(t, a.ID(), c.ID())
	require.NotEqual(t, a.ID(), d.ID())
	require.NotZero(t, c.ID())
	for k := range 1000 {
		key := strconv.Itoa(k)
		require.Equal(t, a.Nodes()[a.Owner(key)], b.Nodes()[b.Owner(key)])
	}
}

// BenchmarkOwner: one lookup on a 3-server ring with the default virtual
// nodes, the load client's per-key routing.
func BenchmarkOwner(b *testing.B) {
	r, err := New([]string{"a:1", "b:1", "c:1"}, 0)
	require.NoError(b, err)
	keys := make([]string, 4096)
	for i := range keys {
		keys[i] = fmt.Sprintf("user%d", i*7919)
	}
	b.ResetTimer()
	for i := range b.N {
		r.Owner(keys[i%len(keys)])
	}
}
