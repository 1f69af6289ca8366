package kvs

import "sync"

// Store is the map a server keeps its keys in. Implementations are safe for
// concurrent use and make every call atomic: a Get sees a Put either wholly
// or not at all.
type Store interface {
	// Get returns the value of key and whether it is present.
	Get(key string) (string, bool)
	// Put sets key to value.
	Put(key, value string)
	// Delete removes key; deleting a missing key is not an error.
	Delete(key string)
	// Len returns the number of keys. It may take time proportional to it.
	Len() int
}

// SyncMapStore is a Store over sync.Map, the course project's choice: reads
// of keys that are not being written take no lock.
type SyncMapStore struct {
	m sync.Map
}

// NewSyncMapStore returns an empty store.
func NewSyncMapStore() *SyncMapStore { return &SyncMapStore{} }

// Get implements Store.
func (s *SyncMapStore) Get(key string) (string, bool) {
	v, ok := s.m.Load(key)
	if !ok {
		return "", false
	}
	return v.(string), true
}

// Put implements Store.
func (s *SyncMapStore) Put(key, value string) { s.m.Store(key, value) }

// Delete implements Store.
func (s *SyncMapStore) Delete(key string) { s.m.Delete(key) }

// Len implements Store.
func (s *SyncMapStore) Len() int {
	n := 0
	s.m.Range(func(_, _ any) bool { n++; return true })
	return n
}
