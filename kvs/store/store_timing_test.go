package store_test

// Benchmarks of the stores over the standard run's 1,000,000 keys, on one
// goroutine. Run with -cpu 1 and compare commits with benchstat:
//
//	go test -run XXX -bench . -cpu 1 -count 10 ./kvs/store/ > new.txt

import (
	"runtime"
	"sync"
	"testing"

	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/workload"
)

const (
	benchRecords    = workload.DefaultRecords
	benchValueBytes = workload.DefaultValueBytes
)

var (
	benchStoreMu   sync.Mutex
	benchStore     store.Store // the last store loadedStore loaded
	benchStoreName string
)

// loadedStore returns a store of the given kind holding every key of the
// standard run, loaded in key order as kvsclient's preload loads them.
// It keeps one store at a time, so that a benchmark's garbage collections
// do not also scan another kind's store.
func loadedStore(b *testing.B, name string) store.Store {
	benchStoreMu.Lock()
	defer benchStoreMu.Unlock()
	if benchStoreName == name {
		return benchStore
	}
	benchStore, benchStoreName = nil, ""
	runtime.GC()
	s, ok := store.New(name)
	if !ok {
		b.Fatalf("no store %q", name)
	}
	keys := workload.Keys(benchRecords)
	value := workload.Value(benchValueBytes, 1)
	for _, k := range keys {
		s.Put(k, value)
	}
	benchStore, benchStoreName = s, name
	return s
}

// uniformKeys returns n keys drawn uniformly over the records (Theta 0):
// harder on the cache than the standard run's Zipfian keys, whose hot
// records stay cached, so these benchmarks bound the server's cost from
// above.
func uniformKeys(b *testing.B, n int) []string {
	gen, err := workload.New(workload.Config{Name: "YCSB-C", Theta: 0, Records: benchRecords, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = workload.Key(gen.Next().Record)
	}
	return keys
}

func BenchmarkStoreGet(b *testing.B) {
	for _, name := range store.Kinds {
		b.Run(name, func(b *testing.B) {
			s := loadedStore(b, name)
			keys := uniformKeys(b, 1<<20)
			buf := make([]byte, 0, 1024)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var ok bool
				if buf, ok = s.AppendGet(buf[:0], keys[i&(len(keys)-1)]); !ok {
					b.Fatal("miss")
				}
			}
		})
	}
}

func BenchmarkStorePut(b *testing.B) {
	for _, name := range store.Kinds {
		b.Run(name, func(b *testing.B) {
			s := loadedStore(b, name)
			keys := uniformKeys(b, 1<<20)
			value := workload.Value(benchValueBytes, 2)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s.Put(keys[i&(len(keys)-1)], value)
			}
		})
	}
}
