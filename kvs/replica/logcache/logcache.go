// Package logcache keeps a Raft group's newest log entries in memory,
// bounded in count and, across a server's groups, in bytes.
package logcache

import (
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// Budget bounds the bytes that the log caches of one server's
// groups hold together: a part of the server's -max-memory.
type Budget struct {
	limit int64
	held  atomic.Int64
}

// NewBudget returns a budget of limit bytes; 0 or less means no
// limit but the caches' own entry counts.
func NewBudget(limit int64) *Budget { return &Budget{limit: limit} }

// Held returns the bytes the caches hold.
func (b *Budget) Held() int64 { return b.held.Load() }

// Limit returns the budget's limit (0: none).
func (b *Budget) Limit() int64 { return max(b.limit, 0) }

func (b *Budget) over() bool { return b.limit > 0 && b.held.Load() > b.limit }

// entryOverhead approximates what a cached entry costs beyond its data:
// the raft.Log struct and the ring's pointer.
const entryOverhead = 96

// entryBytes is what a cached entry counts against the budget.
func entryBytes(l *raft.Log) int64 {
	return int64(len(l.Data)+len(l.Extensions)) + entryOverhead
}

// Cache keeps a group's newest log entries in memory, so that
// replicating them to followers reads no log store: at most a fixed
// number of entries, and fewer while the server's caches together hold
// more than their budget (the group storing entries then evicts its own
// oldest). hashicorp/raft's LogCache bounds only the count, and an entry
// holds a whole batch's writes for its shard: up to about 1 MiB each.
type Cache struct {
	store  raft.LogStore
	budget *Budget

	// stored and storedBytes count the entries stored through the cache,
	// and their data and extensions.
	stored, storedBytes atomic.Int64

	mu    sync.RWMutex
	ring  []*raft.Log // guarded by mu: entry i at i % len(ring)
	first uint64      // guarded by mu: the cached entries are [first, next)
	next  uint64      // guarded by mu
}

// New returns a cache of at most entries entries in front of
// store, its bytes counted against budget.
func New(store raft.LogStore, entries int, budget *Budget) *Cache {
	return &Cache{store: store, budget: budget, ring: make([]*raft.Log, max(entries, 1))}
}

// IsMonotonic passes on the store's answer (raft.MonotonicLogStore).
func (c *Cache) IsMonotonic() bool {
	m, ok := c.store.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// FirstIndex implements raft.LogStore.
func (c *Cache) FirstIndex() (uint64, error) { return c.store.FirstIndex() }

// LastIndex implements raft.LogStore.
func (c *Cache) LastIndex() (uint64, error) { return c.store.LastIndex() }

// GetLog implements raft.LogStore: from the cache when it holds idx.
func (c *Cache) GetLog(idx uint64, log *raft.Log) error {
	c.mu.RLock()
	if idx >= c.first && idx < c.next {
		*log = *c.ring[idx%uint64(len(c.ring))]
		c.mu.RUnlock()
		return nil
	}
	c.mu.RUnlock()
	return c.store.GetLog(idx, log)
}

// Stored returns how many entries were stored through the cache, and
// their bytes of data and extensions.
func (c *Cache) Stored() (entries, bytes int64) { return c.stored.Load(), c.storedBytes.Load() }

// StoreLog implements raft.LogStore.
func (c *Cache) StoreLog(log *raft.Log) error { return c.StoreLogs([]*raft.Log{log}) }

// StoreLogs implements raft.LogStore: the entries are cached once
// stored.
func (c *Cache) StoreLogs(logs []*raft.Log) error {
	if err := c.store.StoreLogs(logs); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var data int64 // the entries' data and extensions
	for _, l := range logs {
		if c.next != c.first && l.Index != c.next {
			c.dropLocked() // not the next entry: the log was cut
		}
		if c.next == c.first {
			c.first, c.next = l.Index, l.Index
		}
		if c.next-c.first == uint64(len(c.ring)) {
			c.evictLocked()
		}
		c.ring[l.Index%uint64(len(c.ring))] = l
		c.next++
		b := entryBytes(l)
		c.budget.held.Add(b)
		data += b - entryOverhead
	}
	c.stored.Add(int64(len(logs)))
	c.storedBytes.Add(data)
	for c.budget.over() && c.first < c.next {
		c.evictLocked()
	}
	return nil
}

// DeleteRange implements raft.LogStore; it empties the cache.
func (c *Cache) DeleteRange(lo, hi uint64) error {
	c.Drop()
	return c.store.DeleteRange(lo, hi)
}

// Drop empties the cache and gives its bytes back to the budget: on
// DeleteRange, and when the group closes.
func (c *Cache) Drop() {
	c.mu.Lock()
	c.dropLocked()
	c.mu.Unlock()
}

func (c *Cache) evictLocked() {
	i := c.first % uint64(len(c.ring))
	n := entryBytes(c.ring[i])
	c.ring[i] = nil
	c.first++
	c.budget.held.Add(-n)
}

func (c *Cache) dropLocked() {
	for c.first < c.next {
		c.evictLocked()
	}
	c.first, c.next = 0, 0
}
