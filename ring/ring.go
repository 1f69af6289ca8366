// Package ring maps keys to servers by consistent hashing with virtual
// nodes over xxhash.
//
// Each server is placed on a 64-bit circle at VirtualNodes points, the
// xxhash of "<name>#<i>". A key belongs to the server owning the first point
// at or after the key's hash, wrapping around. With enough points per server
// every server owns close to 1/N of the keys, and adding a server moves only
// the keys it takes over, about 1/(N+1) of them.
//
// A Ring is immutable and safe for concurrent use; to change membership,
// build a new one and swap it in (the client keeps it in an atomic.Pointer).
package ring

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/cespare/xxhash/v2"
)

// DefaultVirtualNodes is the number of points per server when New is given
// zero. With 1024 points a server's share has a relative spread of about
// 1/sqrt(1024) ≈ 3%, which keeps every server within 10% of an even share
// for 2 to 8 servers (ring_test checks this) while a lookup's table (see
// index) stays a few tens of KiB.
const DefaultVirtualNodes = 1024

// Ring is an immutable assignment of keys to named servers.
type Ring struct {
	nodes  []string
	points []uint64 // sorted positions on the circle
	owners []int32  // owners[i] is the index in nodes of points[i]
	// first[b] is the index of the first point at or after the start of
	// the circle's b-th equal slice, of which there are 1<<(64-shift):
	// a lookup starts there instead of searching the whole circle.
	first []uint32
	shift uint
	hash  func(string) uint64
	id    uint64
}

// New builds a ring over the named servers with vnodes points each (zero
// means DefaultVirtualNodes). Names must be distinct and non-empty; their
// order does not matter for ownership, only for the indices Owner returns.
func New(nodes []string, vnodes int) (*Ring, error) {
	return newWithHash(nodes, vnodes, xxhash.Sum64String)
}

func newWithHash(nodes []string, vnodes int, hash func(string) uint64) (*Ring, error) {
	if len(nodes) == 0 {
		return nil, errors.New("ring: no servers")
	}
	if vnodes == 0 {
		vnodes = DefaultVirtualNodes
	}
	if vnodes < 0 {
		return nil, fmt.Errorf("ring: %d virtual nodes", vnodes)
	}
	seen := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		if n == "" {
			return nil, errors.New("ring: empty server name")
		}
		if seen[n] {
			return nil, fmt.Errorf("ring: server %q listed twice", n)
		}
		seen[n] = true
	}
	type point struct {
		pos   uint64
		owner int32
	}
	pts := make([]point, 0, len(nodes)*vnodes)
	for i, n := range nodes {
		for v := range vnodes {
			pts = append(pts, point{hash(n + "#" + strconv.Itoa(v)), int32(i)})
		}
	}
	// Ties (vanishingly rare with a 64-bit hash) go to the smaller name so
	// that the result does not depend on the order of nodes.
	slices.SortFunc(pts, func(a, b point) int {
		if a.pos != b.pos {
			if a.pos < b.pos {
				return -1
			}
			return 1
		}
		if nodes[a.owner] < nodes[b.owner] {
			return -1
		}
		return 1
	})
	r := &Ring{nodes: slices.Clone(nodes), points: make([]uint64, len(pts)), owners: make([]int32, len(pts)), hash: hash}
	for i, p := range pts {
		r.points[i], r.owners[i] = p.pos, p.owner
	}
	r.index()
	sorted := slices.Clone(nodes)
	slices.Sort(sorted)
	d := xxhash.New()
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(vnodes))
	_, _ = d.Write(buf[:])
	for _, n := range sorted {
		_, _ = d.WriteString(n)
		_, _ = d.Write([]byte{0})
	}
	r.id = d.Sum64() | 1 // never zero: zero means "no ring" on the wire
	return r, nil
}

// Owner returns the index (into Nodes) of the server that owns key.
func (r *Ring) Owner(key string) int {
	if len(r.nodes) == 1 {
		return 0
	}
	h := r.hash(key)
	i := int(r.first[h>>r.shift])
	for i < len(r.points) && r.points[i] < h {
		i++
	}
	if i == len(r.points) {
		i = 0
	}
	return int(r.owners[i])
}

// index cuts the circle into equal slices, a power of two of them and at
// least twice as many as it has points, and notes where each slice's
// points begin, so that Owner looks at one or two points on average
// instead of searching among thousands (a binary search over them was a
// sixth of the load client's CPU).
func (r *Ring) index() {
	bits := uint(1)
	for 1<<bits < 2*len(r.points) {
		bits++
	}
	r.shift = 64 - bits
	r.first = make([]uint32, 1<<bits)
	i := 0
	for b := range r.first {
		start := uint64(b) << r.shift
		for i < len(r.points) && r.points[i] < start {
			i++
		}
		r.first[b] = uint32(i)
	}
}

// Nodes returns the server names in the order given to New. The caller
// must not modify the slice.
func (r *Ring) Nodes() []string { return r.nodes }

// Len returns the number of servers.
func (r *Ring) Len() int { return len(r.nodes) }

// ID identifies the ring's membership and virtual node count: two rings
// with the same ID assign every key to the same server name. It is never 0.
func (r *Ring) ID() uint64 { return r.id }
