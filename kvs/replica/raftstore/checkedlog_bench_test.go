package raftstore

import (
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
)

// copyingStore is an in-memory log that keeps copies of the entries it
// stores, as the stores on disk do (checkedLog reuses what it passes).
type copyingStore struct{ *raft.InmemStore }

func (s copyingStore) StoreLogs(logs []*raft.Log) error {
	copies := make([]*raft.Log, len(logs))
	for i, l := range logs {
		c := *l
		c.Extensions = append([]byte(nil), l.Extensions...)
		copies[i] = &c
	}
	return s.InmemStore.StoreLogs(copies)
}

// BenchmarkCheckedLog measures what the checksums cost per entry: the
// same batches of 64 entries stored into and read back from an in-memory
// log, plain and checked, at the sizes of a small write batch and of a
// group-committed one. (On disk, the entries' write and fsync dwarf
// both: BenchmarkLogStore.)
func BenchmarkCheckedLog(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10} {
		for _, checked := range []bool{false, true} {
			name := fmt.Sprintf("%dKiB/plain", size>>10)
			if checked {
				name = fmt.Sprintf("%dKiB/checked", size>>10)
			}
			b.Run(name, func(b *testing.B) {
				var s Store = copyingStore{raft.NewInmemStore()}
				if checked {
					s = &checkedLog{Store: s, fileOf: func(uint64) string { return "memory" }}
				}
				data := make([]byte, size)
				batch := make([]*raft.Log, 64)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				var l raft.Log
				next := uint64(1)
				for i := 0; i < b.N; i += len(batch) {
					for k := range batch {
						batch[k] = &raft.Log{Index: next, Term: 1, Type: raft.LogCommand, Data: data}
						next++
					}
					if err := s.StoreLogs(batch); err != nil {
						b.Fatal(err)
					}
					for _, e := range batch {
						if err := s.GetLog(e.Index, &l); err != nil {
							b.Fatal(err)
						}
					}
					if err := s.DeleteRange(batch[0].Index, next-1); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
