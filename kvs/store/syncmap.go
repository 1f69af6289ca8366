package store

import (
	"strings"
	"sync"

	"github.com/batchkv/batchkv/wire"
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

// PutIf implements Store. The decision is made on a value loaded, and the
// write succeeds only if the key still holds that very value (or is still
// absent); otherwise the op is decided again on the new one.
func (s *SyncMap) PutIf(op *wire.Op, vals *Values) wire.Result {
	for {
		loaded, found := s.m.Load(op.Key)
		var cur string
		if found {
			cur = loaded.(string)
			if !vals.Fits(len(cur)) {
				return wire.Result{Status: wire.StatusTooLarge}
			}
		}
		st := op.Decide(cur, found)
		if st.Applied() {
			value := strings.Clone(op.Value)
			if found && !s.m.CompareAndSwap(op.Key, loaded, value) {
				continue
			}
			if !found {
				if _, raced := s.m.LoadOrStore(strings.Clone(op.Key), value); raced {
					continue
				}
			}
		}
		res := wire.Result{Status: st}
		if found {
			res.Value, _ = vals.Add(stringBytes(cur))
		}
		return res
	}
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
