package fsm

import (
	"encoding/binary"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
)

// Machine is the state machine of one replicated shard: its store and the
// session table that makes retried batches apply once. Raft calls Apply,
// Snapshot and Restore from one goroutine; reads of the store run
// concurrently with them on the leader.
type Machine struct {
	store    atomic.Pointer[storeBox] // swapped whole by Restore
	newStore func() store.Store

	// sessions is touched only by raft's FSM goroutine.
	sessions map[uint64]session
	// sessionTTL is how long a session is remembered after its last batch,
	// measured in the leader's append times, which every replica sees.
	sessionTTL time.Duration

	restores atomic.Uint64 // snapshots loaded by Restore

	// changes counts the starts and ends of Apply and Restore: odd while
	// one is changing the store. lastCommand is the index of the last
	// command entry applied, or the one the restored snapshot was taken
	// at. Content reads them around its scan (content.go).
	changes     atomic.Uint64
	lastCommand atomic.Uint64

	// snapshotShare is the share of the time a snapshot's Persist may
	// spend writing; outside (0, 1) it writes unpaced. hurry, once set
	// (Hurry), ends the pauses of every snapshot being written.
	snapshotShare float64
	hurry         atomic.Bool

	// scratch takes the results of entries without gets, which nobody
	// reads, and ops the ops of the entry being applied; both are touched
	// only by raft's FSM goroutine.
	scratch []wire.Result
	ops     []wire.Op
}

type storeBox struct{ store.Store }

// session is what a shard remembers of one client session: the last batch
// applied, when, and what its conditional puts answered. The reply to the
// rest of a batch is determined by its ops (every unconditional write of a
// well-formed batch succeeds), but a conditional put's depends on the
// state it was decided on, which a retry no longer finds: so the outcomes
// are kept, and a retry is answered with them instead of being decided
// again. They are kept until the session's next batch replaces them (a
// session has one batch in flight) or the session expires; their values
// are bounded by maxEntryValues.
type session struct {
	seq      uint64
	last     int64         // unix seconds of the entry that applied seq
	outcomes []wire.Result // of batch seq's OpPutIf ops, in order; values of their own
}

// Result is what Apply returns for a command (Raft hands it back as the
// entry's ApplyFuture.Response).
type Result struct {
	// Duplicate says the entry repeated a batch of its session that was
	// applied before, and was not applied again.
	Duplicate bool
	// Results are the results of the entry's ops when it carries gets or
	// conditional puts (for a Duplicate, what its conditional puts first
	// answered, or nil when that is not known); nil otherwise.
	Results []wire.Result
	// Err says the entry did not decode; nothing of it was applied.
	Err error
}

// sessionSweepEvery is how often, in log entries, expired sessions are
// dropped. Entry indexes and append times are the same on every replica,
// so every replica drops the same sessions.
const sessionSweepEvery = 1024

// New returns the state machine of an empty shard.
func New(cfg Config) *Machine {
	cfg.validate()
	f := newShardFSM(cfg.NewStore, cfg.SessionTTL)
	f.snapshotShare = cfg.SnapshotShare
	return f
}

// newShardFSM returns an empty shard's state machine whose stores
// newStore makes, remembering sessions for ttl.
func newShardFSM(newStore func() store.Store, ttl time.Duration) *Machine {
	f := &Machine{newStore: newStore, sessions: map[uint64]session{}, sessionTTL: ttl}
	f.store.Store(&storeBox{newStore()})
	return f
}

// Apply implements raft.FSM.
func (f *Machine) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	f.changes.Add(1)
	defer f.applied(l.Index)
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
		return Result{Err: fmt.Errorf("replica: log entry %d does not decode: %w", l.Index, err)}
	}
	if args.Session != 0 {
		if s, ok := f.sessions[args.Session]; ok && args.Seq <= s.seq {
			return Result{Duplicate: true, Results: s.replay(args.Seq, args.Ops)}
		}
	}
	var results []wire.Result
	results, f.scratch = applyEntry(f.current(), args.Ops, f.scratch)
	if args.Session != 0 {
		f.sessions[args.Session] = session{seq: args.Seq, last: now, outcomes: outcomesOf(args.Ops, results)}
	}
	return Result{Results: results}
}

// outcomesOf returns copies of the results of ops' conditional puts, in
// order, or nil when ops has none.
func outcomesOf(ops []wire.Op, results []wire.Result) []wire.Result {
	var out []wire.Result
	for i := range ops {
		if ops[i].Code == wire.OpPutIf {
			out = append(out, wire.Result{Status: results[i].Status, Value: strings.Clone(results[i].Value)})
		}
	}
	return out
}

// replay answers a retry of batch seq, whose ops are ops, from what the
// session remembers: one result per op, the remembered outcome for each
// conditional put, StatusOK for the other writes and StatusUnavail for
// gets (what they read then is gone). It returns nil when it cannot: the
// retry is of an older batch, or its conditional puts are not the ones
// remembered (a session restored from a snapshot of the first format,
// which kept no outcomes).
func (s session) replay(seq uint64, ops []wire.Op) []wire.Result {
	if seq != s.seq {
		return nil
	}
	conds := 0
	for i := range ops {
		if ops[i].Code == wire.OpPutIf {
			conds++
		}
	}
	if conds == 0 || conds != len(s.outcomes) {
		return nil
	}
	results := make([]wire.Result, len(ops))
	k := 0
	for i := range ops {
		switch ops[i].Code {
		case wire.OpPutIf:
			results[i] = s.outcomes[k]
			k++
		case wire.OpGet:
			results[i] = wire.Result{Status: wire.StatusUnavail}
		}
	}
	return results
}

// keptOps is the largest ops slice Apply keeps for the next entry; an
// entry of a huge batch does not leave every shard holding one as large.
const keptOps = 8192

// releaseOps drops what the ops slice of the entry just applied refers
// to, and the slice itself when it is large.
func (f *Machine) releaseOps() {
	if cap(f.ops) > keptOps {
		f.ops = nil
		return
	}
	clear(f.ops)
}

func (f *Machine) expireSessions(now int64) {
	cutoff := now - int64(f.sessionTTL/time.Second)
	for id, s := range f.sessions {
		if s.last < cutoff {
			delete(f.sessions, id)
		}
	}
}

// maxEntryValues caps the bytes of values that one entry's gets and
// conditional puts return, at what a reply frame holds: past it, an op
// answers StatusTooLarge, and a conditional put is not applied. It is
// fixed, not taken from the server's reply budget as a read served from a
// server's own store is (package backend): every replica applies the same
// entries to the same state, so every replica refuses the same ops.
const maxEntryValues = wire.MaxFrameBytes - 1<<20

// applyEntry applies an entry's ops, which passed Op.Check, in order: its
// writes, conditional ones decided here, and the gets that ride on it,
// which read the store as the entry finds it. It returns the results when
// the entry carries gets or conditional puts, and nil when it carries only
// unconditional writes (whose results are always OK), which it writes
// into scratch, grown as needed and returned for the next entry.
func applyEntry(st store.Store, ops []wire.Op, scratch []wire.Result) (results, nextScratch []wire.Result) {
	answers := false
	for i := range ops {
		if ops[i].Code == wire.OpGet || ops[i].Code == wire.OpPutIf {
			answers = true
			break
		}
	}
	if answers {
		results = make([]wire.Result, len(ops))
	} else {
		if cap(scratch) < len(ops) {
			scratch = make([]wire.Result, len(ops))
		}
		results = scratch[:len(ops)]
	}
	store.Apply(st, ops, results, &store.Values{Limit: maxEntryValues})
	if !answers {
		return nil, scratch
	}
	return results, scratch
}

// current returns the shard's current store.
func (f *Machine) current() store.Store { return f.store.Load().Store }

// Store returns the shard's current store, for reads. A snapshot restore
// replaces it: callers take it anew for each batch.
func (f *Machine) Store() store.Store { return f.current() }

// Restores returns how many snapshots Restore has loaded.
func (f *Machine) Restores() uint64 { return f.restores.Load() }

// digest returns an order-independent hash of the shard's pairs: the sum
// of every pair's xxhash. It reads the store while applies may go on, so
// it means something only when no apply ran meanwhile (Content).
func (f *Machine) digest() uint64 {
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
