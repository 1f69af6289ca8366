// Package store holds a server's keys and values: the Store interface and
// its two implementations, Arena (the default: an open-addressing hash
// table over pointer-free byte arenas, built for millions of keys) and
// SyncMap (sync.Map, the course project's choice). It depends on nothing
// but the wire types, so a benchmark or another program can use it alone:
//
//	s, _ := store.New(store.DefaultKind)
//	s.Put("k", "v")
//	v, ok := store.Get(s, "k")
//	res := s.PutIf(&wire.Op{Code: wire.OpPutIf, Cond: wire.CondEqual, Key: "k", Expect: "v", Value: "w"},
//		&store.Values{Limit: 1 << 20}) // res.Status == wire.StatusOK, res.Value == "v"
//
// Apply runs a batch of wire ops against a Store in order, through the
// store's Batcher when it has one.
package store

import "github.com/batchkv/batchkv/wire"

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
	// PutIf applies op, an OpPutIf that passed wire.Op.Check: it decides
	// op's condition (wire.Op.Decide) on the value op.Key holds and, if it
	// holds, writes op.Value, in one step atomic with every other call on
	// the key. The value the key held is copied into vals, which the
	// result's value aliases; when vals refuses it (over its Limit), the
	// op is not applied and answers wire.StatusTooLarge.
	PutIf(op *wire.Op, vals *Values) wire.Result
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

// Kinds names the Store implementations that New knows.
var Kinds = []string{"arena", "syncmap"}

// DefaultKind is the name of the Store a server uses unless told otherwise.
const DefaultKind = "arena"

// New returns an empty store of the named implementation: "arena"
// (Arena) or "syncmap" (SyncMap).
func New(name string) (Store, bool) {
	switch name {
	case "arena":
		return NewArena(), true
	case "syncmap":
		return NewSyncMap(), true
	}
	return nil, false
}
