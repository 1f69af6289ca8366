package store

import (
	"strings"
	"sync"
)

// SyncMap is a Store over sync.Map, the course project's choice: reads
// of keys that are not being written take no lock. Every key and value is a
// string of its own on the heap, which the garbage collector scans.
type SyncMap struct {
	m sync.Map
}

// NewSyncMap returns an empty store.
func NewSyncMap() *SyncMap { return &SyncMap{} }

// AppendGet implements Store.
func (s *SyncMap) AppendGet(dst []byte, key string) ([]byte, bool) {
	v, ok := s.m.Load(key)
	if !ok {
		return dst, false
	}
	return append(dst, v.(string)...), true
}

// Put implements Store.
func (s *SyncMap) Put(key, value string) {
	s.m.Store(strings.Clone(key), strings.Clone(value))
}

// Delete implements Store.
func (s *SyncMap) Delete(key string) { s.m.Delete(key) }

// Len implements Store.
func (s *SyncMap) Len() int {
	n := 0
	s.m.Range(func(_, _ any) bool { n++; return true })
	return n
}

// Range implements Store.
func (s *SyncMap) Range(fn func(key string, value []byte) bool) {
	s.m.Range(func(k, v any) bool { return fn(k.(string), []byte(v.(string))) })
}
