// Package workload generates the course's YCSB-style load: a mix of reads
// and writes over Records keys drawn from a Zipfian distribution, keys being
// decimal record numbers ("0" .. "999999") and values ValueBytes long.
//
//	gen, err := workload.New(workload.Config{Name: "YCSB-B", Theta: 0.99, Seed: 1})
//	op := gen.Next() // op.Record, op.Read; Key(op.Record)
//
// Generators are not safe for concurrent use: make one per goroutine, with
// distinct seeds. Drawing an op costs no allocation; the caller formats its
// key (AppendKey), or takes it from the shared table that Keys builds once.
package workload

import (
	"fmt"
	"strconv"
	"sync"
)

// Defaults of the standard run (shared/BENCHMARKS.md).
const (
	DefaultRecords    = 1_000_000
	DefaultTheta      = 0.99
	DefaultValueBytes = 128
)

// ReadFraction returns the share of reads of a named mix: YCSB-A 50%,
// YCSB-B 95%, YCSB-C 100%.
func ReadFraction(name string) (float64, error) {
	switch name {
	case "YCSB-A":
		return 0.50, nil
	case "YCSB-B":
		return 0.95, nil
	case "YCSB-C":
		return 1, nil
	}
	return 0, fmt.Errorf("workload: unknown workload %q (want YCSB-A, YCSB-B or YCSB-C)", name)
}

// Config describes a workload.
type Config struct {
	// Name is YCSB-A, YCSB-B or YCSB-C. Empty means YCSB-B.
	Name string
	// Theta is the Zipfian skew in [0, 1); 0 is uniform. Use DefaultTheta
	// for the standard run: the zero value means uniform, not the default.
	Theta float64
	// Records is the number of keys. Zero means DefaultRecords.
	Records uint64
	// Seed seeds the generator; the same seed gives the same ops.
	Seed uint64
}

// Op is one drawn operation. Its key is the record number in decimal:
// Key(Record), or AppendKey to write it into a buffer.
type Op struct {
	Record uint64 // record number in [0, Records)
	Read   bool   // a get when true, else a put
}

// Generator draws ops. Not safe for concurrent use.
type Generator struct {
	rng           *Xorshift64
	keys          *Zipfian
	readThreshold uint64 // a draw below it is a read
	allReads      bool
}

// New returns a generator for cfg.
func New(cfg Config) (*Generator, error) {
	if cfg.Name == "" {
		cfg.Name = "YCSB-B"
	}
	if cfg.Records == 0 {
		cfg.Records = DefaultRecords
	}
	frac, err := ReadFraction(cfg.Name)
	if err != nil {
		return nil, err
	}
	rng := NewXorshift64(cfg.Seed)
	z, err := NewZipfian(cfg.Records, cfg.Theta, rng)
	if err != nil {
		return nil, err
	}
	return &Generator{
		rng:           rng,
		keys:          z,
		readThreshold: uint64(frac * (1 << 63) * 2),
		allReads:      frac >= 1,
	}, nil
}

// Next draws the next op.
func (g *Generator) Next() Op {
	rec := g.keys.Next()
	read := g.allReads || g.rng.Uint64() < g.readThreshold
	return Op{Record: rec, Read: read}
}

// Key returns the key of record rec.
func Key(rec uint64) string { return strconv.FormatUint(rec, 10) }

// AppendKey appends the key of record rec to dst. A load generator that
// formats keys into a reused buffer avoids the cache misses of looking
// them up in Keys' table of a million strings (see BenchmarkKeyFormatted).
func AppendKey(dst []byte, rec uint64) []byte { return strconv.AppendUint(dst, rec, 10) }

var (
	keysMu sync.Mutex
	keys   []string
)

// Keys returns the decimal names of records 0 .. n-1. The slice is built
// once and shared; callers must not modify it.
func Keys(n uint64) []string {
	keysMu.Lock()
	defer keysMu.Unlock()
	if uint64(len(keys)) >= n {
		return keys[:n]
	}
	k := make([]string, n)
	for i := range k {
		k[i] = strconv.FormatUint(uint64(i), 10)
	}
	keys = k
	return k
}

// Value returns a value of n bytes derived from seed, for puts. Distinct
// seeds give distinct values as long as n >= 8.
func Value(n int, seed uint64) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	s := strconv.FormatUint(seed, 36)
	copy(b, s)
	return string(b)
}
