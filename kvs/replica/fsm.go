package replica

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
)

// shardFSM is the state machine of one replicated shard: its store and the
// session table that makes retried batches apply once. Raft calls Apply,
// Snapshot and Restore from one goroutine; reads of the store run
// concurrently with them on the leader.
type shardFSM struct {
	store    atomic.Pointer[storeBox] // swapped whole by Restore
	newStore func() store.Store

	// sessions is touched only by raft's FSM goroutine.
	sessions map[uint64]session
	// sessionTTL is how long a session is remembered after its last batch,
	// measured in the leader's append times, which every replica sees.
	sessionTTL time.Duration

	restores atomic.Uint64 // snapshots loaded by Restore

	// scratch takes the results of entries without gets, which nobody
	// reads, and ops the ops of the entry being applied; both are touched
	// only by raft's FSM goroutine.
	scratch []wire.Result
	ops     []wire.Op
}

type storeBox struct{ store.Store }

// session is what a shard remembers of one client session: the last batch
// applied and when. A batch's reply is determined by its ops (every write
// of a well-formed batch succeeds), so remembering its number remembers
// its reply.
type session struct {
	seq  uint64
	last int64 // unix seconds of the entry that applied seq
}

// applyResult is what Apply returns for a command: whether it was a
// duplicate of a batch already applied, and the results of the entry's
// ops when it carries gets (see Group.Write).
type applyResult struct {
	duplicate bool
	results   []wire.Result
	err       error
}

// sessionSweepEvery is how often, in log entries, expired sessions are
// dropped. Entry indexes and append times are the same on every replica,
// so every replica drops the same sessions.
const sessionSweepEvery = 1024

func newShardFSM(newStore func() store.Store, ttl time.Duration) *shardFSM {
	f := &shardFSM{newStore: newStore, sessions: map[uint64]session{}, sessionTTL: ttl}
	f.store.Store(&storeBox{newStore()})
	return f
}

// Apply implements raft.FSM.
func (f *shardFSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	// Whole seconds: the append time reaches followers through msgpack,
	// which need not keep nanoseconds, and replicas must agree on it.
	now := l.AppendedAt.Unix()
	if l.Index%sessionSweepEvery == 0 {
		f.expireSessions(now)
	}
	// The ops alias the entry's bytes, and reuse the last entry's slice,
	// cleared on return so as not to hold the bytes (releaseOps):
	// applyEntry keeps neither.
	args := wire.BatchArgs{Ops: f.ops[:0]}
	err := wire.DecodeBatchArgsAliasing(l.Data, &args)
	f.ops = args.Ops
	defer f.releaseOps()
	if err != nil {
		// Only the leader's own Service writes entries, so this is a bug,
		// not bad input; refuse the entry on every replica alike.
		return applyResult{err: fmt.Errorf("replica: log entry %d does not decode: %w", l.Index, err)}
	}
	if args.Session != 0 {
		if s, ok := f.sessions[args.Session]; ok && args.Seq <= s.seq {
			return applyResult{duplicate: true}
		}
		f.sessions[args.Session] = session{seq: args.Seq, last: now}
	}
	var results []wire.Result
	results, f.scratch = applyEntry(f.current(), args.Ops, f.scratch)
	return applyResult{results: results}
}

// keptOps is the largest ops slice Apply keeps for the next entry; an
// entry of a huge batch does not leave every shard holding one as large.
const keptOps = 8192

// releaseOps drops what the ops slice of the entry just applied refers
// to, and the slice itself when it is large.
func (f *shardFSM) releaseOps() {
	if cap(f.ops) > keptOps {
		f.ops = nil
		return
	}
	clear(f.ops)
}

func (f *shardFSM) expireSessions(now int64) {
	cutoff := now - int64(f.sessionTTL/time.Second)
	for id, s := range f.sessions {
		if s.last < cutoff {
			delete(f.sessions, id)
		}
	}
}

// applyEntry applies an entry's ops, which passed Op.Check, in order: its
// writes, and the gets that ride on it, which read the store as the entry
// finds it. It returns the results when the entry carries gets, and nil
// when it carries only writes (whose results are always OK), which it
// writes into scratch, grown as needed and returned for the next entry.
func applyEntry(st store.Store, ops []wire.Op, scratch []wire.Result) (results, nextScratch []wire.Result) {
	hasGets := false
	for i := range ops {
		if ops[i].Code == wire.OpGet {
			hasGets = true
			break
		}
	}
	if hasGets {
		results = make([]wire.Result, len(ops))
	} else {
		if cap(scratch) < len(ops) {
			scratch = make([]wire.Result, len(ops))
		}
		results = scratch[:len(ops)]
	}
	// The gets are few (one per key the entry writes, at most), and the
	// entry's size bounds their values.
	store.Apply(st, ops, results, &store.Values{Limit: math.MaxInt})
	if !hasGets {
		return nil, scratch
	}
	return results, scratch
}

// current returns the shard's current store.
func (f *shardFSM) current() store.Store { return f.store.Load().Store }

// digest returns an order-independent hash of the shard's pairs: the sum
// of every pair's xxhash. It reads the store while applies may go on, so
// it means something only when the applied index did not move meanwhile.
func (f *shardFSM) digest() uint64 {
	var sum uint64
	h := xxhash.New()
	var n [8]byte
	f.current().Range(func(k string, v []byte) bool {
		h.Reset()
		binary.LittleEndian.PutUint64(n[:], uint64(len(k)))
		_, _ = h.Write(n[:])
		_, _ = h.WriteString(k)
		_, _ = h.Write(v)
		sum += h.Sum64()
		return true
	})
	return sum
}
