package workload

import (
	"strconv"
	"testing"
)

// Benchmarks of the load generator's cost per op. The key benchmarks
// compare looking a Zipfian record's key up in the precomputed table of
// 1,000,000 strings (a likely cache miss for all but the hottest records)
// with formatting it into a reused buffer.

func zipfRecords(b *testing.B) []uint64 {
	z, err := NewZipfian(DefaultRecords, DefaultTheta, NewXorshift64(1))
	if err != nil {
		b.Fatal(err)
	}
	recs := make([]uint64, 1<<22)
	for i := range recs {
		recs[i] = z.Next()
	}
	return recs
}

func BenchmarkZipfianNext(b *testing.B) {
	z, err := NewZipfian(DefaultRecords, DefaultTheta, NewXorshift64(1))
	if err != nil {
		b.Fatal(err)
	}
	var sum uint64
	for i := 0; i < b.N; i++ {
		sum += z.Next()
	}
	sink = sum
}

func BenchmarkKeyFromTable(b *testing.B) {
	names, recs := Keys(DefaultRecords), zipfRecords(b)
	n := 0
	for i := 0; i < b.N; i++ {
		n += len(names[recs[i&(len(recs)-1)]])
	}
	sink = uint64(n)
}

func BenchmarkKeyFormatted(b *testing.B) {
	recs := zipfRecords(b)
	buf := make([]byte, 0, 64)
	n := 0
	for i := 0; i < b.N; i++ {
		buf = strconv.AppendUint(buf[:0], recs[i&(len(recs)-1)], 10)
		n += len(buf)
	}
	sink = uint64(n)
}

var sink uint64
