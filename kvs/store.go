package kvs

import (
	"strings"
	"sync"
)

// Store is the map a server keeps its keys in. Implementations are safe for
// concurrent use and make every call atomic: a read sees a write either
// wholly or not at all.
//
// Arguments may alias buffers that the caller reuses once the call returns,
// so a store copies whatever it keeps.
type Store interface {
	// AppendGet appends the value of key to dst and reports whether key is
	// present; when it is not, dst is returned unchanged.
	AppendGet(dst []byte, key string) ([]byte, bool)
	// Put sets key to value.
	Put(key, value string)
	// Delete removes key; deleting a missing key is not an error.
	Delete(key string)
	// Len returns the number of keys. It may take time proportional to it.
	Len() int
	// Range calls fn for every key and value until fn returns false. The
	// arguments are valid only during the call. Writes concurrent with
	// Range may or may not be seen; a replica's snapshot calls it while no
	// write runs.
	Range(fn func(key string, value []byte) bool)
}

// Get returns the value of key in s and whether it is present, in a string
// of its own.
func Get(s Store, key string) (string, bool) {
	v, ok := s.AppendGet(nil, key)
	return string(v), ok
}

// Stores names the Store implementations that NewStore knows.
var Stores = []string{"arena", "syncmap"}

// DefaultStore is the name of the Store a server uses unless told otherwise.
const DefaultStore = "arena"

// NewStore returns an empty store of the named implementation: "arena"
// (ArenaStore) or "syncmap" (SyncMapStore).
func NewStore(name string) (Store, bool) {
	switch name {
	case "arena":
		return NewArenaStore(), true
	case "syncmap":
		return NewSyncMapStore(), true
	}
	return nil, false
}

// SyncMapStore is a Store over sync.Map, the course project's choice: reads
// of keys that are not being written take no lock. Every key and value is a
// string of its own on the heap, which the garbage collector scans.
type SyncMapStore struct {
	m sync.Map
}

// NewSyncMapStore returns an empty store.
func NewSyncMapStore() *SyncMapStore { return &SyncMapStore{} }

// AppendGet implements Store.
func (s *SyncMapStore) AppendGet(dst []byte, key string) ([]byte, bool) {
	v, ok := s.m.Load(key)
	if !ok {
		return dst, false
	}
	return append(dst, v.(string)...), true
}

// Put implements Store.
func (s *SyncMapStore) Put(key, value string) {
	s.m.Store(strings.Clone(key), strings.Clone(value))
}

// Delete implements Store.
func (s *SyncMapStore) Delete(key string) { s.m.Delete(key) }

// Len implements Store.
func (s *SyncMapStore) Len() int {
	n := 0
	s.m.Range(func(_, _ any) bool { n++; return true })
	return n
}

// Range implements Store.
func (s *SyncMapStore) Range(fn func(key string, value []byte) bool) {
	s.m.Range(func(k, v any) bool { return fn(k.(string), []byte(v.(string))) })
}
