// Package session hands out the sessions a replicated cluster's client
// numbers its batches in: a shard applies a batch once per session and
// number, so a batch resent after a lost reply is not applied twice.
package session

import (
	crand "crypto/rand"
	"encoding/binary"
	"sync"
	"sync/atomic"
)

// Session is one client session: a unique ID and the number of its last
// batch. It carries one batch at a time.
type Session struct {
	// ID is the session's identifier, never 0, unique to this pool and,
	// from a random base, across clients.
	ID uint64
	// Seq is the number of the session's last batch; the next batch takes
	// Seq+1.
	Seq uint64
}

// Pool hands out sessions, each used by one batch at a time, and keeps
// those returned for reuse.
type Pool struct {
	base uint64
	next atomic.Uint64
	mu   sync.Mutex
	free []*Session
}

// NewPool returns a pool whose IDs start from a random base.
func NewPool() *Pool {
	var b [8]byte
	_, _ = crand.Read(b[:])
	return &Pool{base: binary.LittleEndian.Uint64(b[:])}
}

// Get returns a session no other caller holds.
func (p *Pool) Get() *Session {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		s := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return s
	}
	p.mu.Unlock()
	// Multiplying by an odd constant is a bijection, so IDs stay unique.
	id := p.base ^ (p.next.Add(1) * 0x9e3779b97f4a7c15)
	if id == 0 {
		id = p.base ^ (p.next.Add(1) * 0x9e3779b97f4a7c15)
	}
	return &Session{ID: id}
}

// Put returns s for reuse; its caller must not use it after.
func (p *Pool) Put(s *Session) {
	p.mu.Lock()
	p.free = append(p.free, s)
	p.mu.Unlock()
}
