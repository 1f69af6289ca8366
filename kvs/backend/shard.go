package backend

import (
	"errors"
	"slices"
	"time"

	"github.com/batchkv/batchkv/internal/planted"
	"github.com/batchkv/batchkv/kvs/replica"
	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/wire"
)

// shardPlan is how serveShard answers one batch: which ops go into the
// log entry, which gets are read from the store, and which are answered
// from the batch's own writes.
type shardPlan struct {
	// entry is the batch's log entry: its writes in order, and before the
	// first write of a key that an earlier get of the batch reads, one get
	// of that key (a "riding" get), which reads the value the key had
	// before the batch wrote it. A key the batch writes conditionally
	// (wire.OpPutIf) has every get of it in the entry, in batch order,
	// since what a conditional write leaves is known only once the state
	// machine has decided it.
	entry []wire.Op
	// writeAt[j] is the index in ops of entry op j (writes and riding gets
	// alike).
	writeAt []int
	// readAt holds the indexes in ops of the gets of keys the batch does
	// not write, in order: they are read from the store, in place, after
	// the entry is applied (or after a read barrier when the batch writes
	// nothing).
	readAt []int32
	// riding links each get that reads a key before the batch writes it
	// (or any get of a key written conditionally) to the entry index of
	// the get that answers it.
	riding []link
	// shadow links each get that follows a write of its key in the batch
	// to the index in ops of the last such write: it reads that write.
	// (Slices, not maps: under a skewed load a batch has many such gets
	// of its hot keys, and map inserts were 2% of a server's CPU.)
	shadow               []link
	rejected, puts, dels uint64
	// conds counts the entry's conditional writes, whose results come
	// from the state machine.
	conds int
	// putBytes is what the entry's puts would take in a store (StoreLimit).
	putBytes int64
}

// link ties the get at index at in a batch's ops to what answers it.
type link struct{ at, from int }

// planShard sorts a batch's ops (see shardPlan), answering the ones that
// fail Op.Check in results at once. A get of a key the batch does not
// write, most gets, costs a fingerprint and one bit of writeSet's filter.
func planShard(ops []wire.Op, results []wire.Result) *shardPlan {
	p := &shardPlan{}
	var written writeSet // the keys the batch writes
	for i := range ops {
		if ops[i].Code != wire.OpGet && ops[i].Check() == wire.StatusOK {
			written.add(ops[i].Key, ops[i].Code == wire.OpPutIf)
		}
	}
	p.readAt = make([]int32, 0, len(ops)-written.writes)
	for i := range ops {
		op := &ops[i]
		if st := op.Check(); st != wire.StatusOK {
			results[i] = wire.Result{Status: st}
			p.rejected++
			continue
		}
		w := written.find(op.Key)
		if op.Code == wire.OpGet {
			switch {
			case w == nil:
				p.readAt = append(p.readAt, int32(i))
			case w.cond:
				// Read in the entry, at its place among the key's writes.
				p.riding = append(p.riding, link{at: i, from: len(p.entry)})
				p.entry = append(p.entry, *op)
				p.writeAt = append(p.writeAt, i)
			case w.last >= 0:
				p.shadow = append(p.shadow, link{at: i, from: w.last})
			default:
				// Read before the batch writes the key: ride on the entry.
				if w.rider < 0 {
					w.rider = len(p.entry)
					p.entry = append(p.entry, *op)
					p.writeAt = append(p.writeAt, i)
				}
				p.riding = append(p.riding, link{at: i, from: w.rider})
			}
			continue
		}
		w.last = i
		p.entry = append(p.entry, *op)
		p.writeAt = append(p.writeAt, i)
		switch op.Code {
		case wire.OpDelete:
			p.dels++
		case wire.OpPutIf:
			p.conds++
			p.puts++
			p.putBytes += recordBytes(op)
		default:
			p.puts++
			p.putBytes += recordBytes(op)
		}
	}
	return p
}

// serveShard applies a batch on this replica of its shard in one round
// of replication. A batch that writes becomes one log entry; once it is
// committed and applied, which proves this replica still leads, the gets
// of keys the batch does not write are read from the store. A batch that
// only reads takes a read barrier instead. Ops on one key keep their
// batch order: a get before the batch's first write of its key rides in
// the entry, and a get after a write of its key is answered from that
// write.
func (b *Replicated) serveShard(g *replica.Group, args *wire.BatchArgs, reply *wire.BatchReply, cl *Call) {
	ops, results := args.Ops, reply.Results
	p := planShard(ops, results)
	b.stats.Add(&b.stats.Rejected, p.rejected)
	if len(p.entry) == 0 {
		if len(p.readAt) == 0 {
			return
		}
		// Within a leader's lease (lease reads on) no barrier is needed.
		// The bug planted by Planted.StaleReads: read-only batches skip
		// the barrier.
		if !g.ReadLease() && !b.Planted.StaleReads.Load() && !b.plantedOwner(g) {
			if err := g.ReadBarrier(); err != nil {
				b.answerAll(p, results, wire.StatusNotLeader)
				reply.Leader = leaderAfter(g, err)
				return
			}
		}
		b.serveReads(g.Store(), ops, p, results, cl)
		return
	}
	var leaderDecided map[int]wire.Result // the bug planted by Planted.CASOnLeader
	if p.conds > 0 && b.Planted.CASOnLeader.Load() {
		leaderDecided = planted.DecideBeforeLog(g.Store(), p.entry)
	}
	// A part that would make one entry past wire.MaxEntryBytes is cut by
	// a client of ours; another's is refused rather than made an entry
	// that each follower decodes in time quadratic in its size.
	size, over := wire.EntryBound(p.entry)
	if over {
		b.refuseWrites(g, ops, p, results, wire.StatusTooLarge)
		b.serveReads(g.Store(), ops, p, results, cl)
		return
	}
	if b.mustRefusePuts(g, p.putBytes) {
		b.refuseWrites(g, ops, p, results, wire.StatusNoMemory)
		b.serveReads(g.Store(), ops, p, results, cl)
		return
	}
	entry := wire.AppendBatchArgs(make([]byte, 0, size), &wire.BatchArgs{Session: args.Session, Seq: args.Seq, Ops: p.entry})
	w, err := g.Write(entry, replica.ApplyTimeout)
	switch {
	case errors.Is(err, replica.ErrNoSpace):
		b.refuseWrites(g, ops, p, results, wire.StatusNoSpace)
		b.serveReads(g.Store(), ops, p, results, cl)
		return
	case errors.Is(err, replica.ErrNotLeader):
		reply.Leader = leaderAfter(g, err)
		b.answerAll(p, results, wire.StatusNotLeader)
		return
	case err != nil:
		reply.Leader = g.LeaderHint()
		if !errors.Is(err, replica.ErrLeadershipLost) {
			b.log.Warn("replicated write failed", "shard", g.Shard(), "err", err)
		}
		b.answerAll(p, results, wire.StatusUnknown)
		return
	}
	b.stats.Add(&b.stats.Puts, p.puts)
	b.stats.Add(&b.stats.Deletes, p.dels)
	var gets uint64
	fromFSM := len(w.Results) == len(p.entry) // and, for a retry, the results it got the first time
	for j, i := range p.writeAt {
		switch {
		case ops[i].Code == wire.OpGet:
		case ops[i].Code != wire.OpPutIf:
			results[i] = wire.Result{Status: wire.StatusOK}
		case leaderDecided != nil:
			results[i] = leaderDecided[j]
		case fromFSM:
			results[i] = w.Results[j]
		default:
			// A retry of a batch whose outcome the shard no longer
			// remembers (see replica.Written): applied once, or not at
			// all, but the answer is gone.
			results[i] = wire.Result{Status: wire.StatusUnknown}
		}
	}
	for _, l := range p.riding {
		switch {
		case w.Duplicate || len(w.Results) != len(p.entry):
			// A retry of a batch applied before: the value its get read
			// then is gone. Say so rather than answer a later value.
			results[l.at] = wire.Result{Status: wire.StatusUnavail}
		default:
			results[l.at] = w.Results[l.from]
			gets++
		}
	}
	for _, l := range p.shadow {
		if ops[l.from].Code == wire.OpPut {
			results[l.at] = wire.Result{Status: wire.StatusOK, Value: ops[l.from].Value}
		} else {
			results[l.at] = wire.Result{Status: wire.StatusNotFound}
		}
		gets++
	}
	b.stats.Add(&b.stats.Gets, gets)
	b.serveReads(g.Store(), ops, p, results, cl)
}

// refuseWrites answers the writes of a batch that its shard cannot take
// with st (StatusNoSpace: a majority's disks are full; StatusNoMemory:
// the server's stores are at their limit), and readies all its gets to be
// read from the store after a barrier (those after a write of their key
// in the batch read the value the write would have replaced: it was not
// applied). If the barrier fails, every op gets st or StatusNotLeader.
func (b *Replicated) refuseWrites(g *replica.Group, ops []wire.Op, p *shardPlan, results []wire.Result, st wire.Status) {
	gets := len(p.readAt) + len(p.riding) + len(p.shadow)
	if gets > 0 && g.ReadBarrier() != nil {
		b.answerAll(p, results, st)
		p.readAt = nil
		return
	}
	for _, i := range p.writeAt {
		if ops[i].Code != wire.OpGet {
			results[i] = wire.Result{Status: st}
		}
	}
	for _, l := range p.riding {
		p.readAt = append(p.readAt, int32(l.at))
	}
	for _, l := range p.shadow {
		p.readAt = append(p.readAt, int32(l.at))
	}
	slices.Sort(p.readAt)
	p.readAt = slices.Compact(p.readAt)
}

// plantedOwner reports whether the bug planted by Planted.ServeByMap
// lets this replica serve reads because the map prefers it.
func (b *Replicated) plantedOwner(g *replica.Group) bool {
	return b.Planted.ServeByMap.Load() && g.Placement()[0] == b.set.Self()
}

// handOverWait bounds how long a batch turned away during a leadership
// hand-over waits to learn the new leader (a hand-over takes tens of
// milliseconds; an election after a failed one, about a second).
const handOverWait = 500 * time.Millisecond

// leaderAfter returns the leader hint for a batch that g turned away
// with err: during a hand-over, the new leader once it is known, so that
// the client goes there at once instead of backing off and retrying
// here.
func leaderAfter(g *replica.Group, err error) string {
	if errors.Is(err, replica.ErrHandingOver) {
		return g.AwaitNewLeader(handOverWait)
	}
	return g.LeaderHint()
}

// serveReads reads the plan's free gets of ops from st, the shard's
// store, into their places in results.
func (b *Replicated) serveReads(st store.Store, ops []wire.Op, p *shardPlan, results []wire.Result, cl *Call) {
	at := p.readAt
	switch len(at) {
	case 0:
		return // (a nil at would mean every op)
	case len(ops):
		at = nil // only reads, the common case: all of ops
	}
	b.apply.applyAt(st, ops, at, results, cl)
}

// answerAll answers every op that passed Op.Check of a batch that was not
// served: writes with st (StatusNotLeader: not applied; StatusUnknown:
// perhaps applied), gets with StatusNotLeader. Both make the client send
// the batch again.
func (b *Replicated) answerAll(p *shardPlan, results []wire.Result, st wire.Status) {
	for _, i := range p.writeAt {
		results[i] = wire.Result{Status: st}
	}
	notRead := wire.Result{Status: wire.StatusNotLeader}
	for _, i := range p.readAt {
		results[i] = notRead
	}
	for _, l := range p.riding {
		results[l.at] = notRead
	}
	for _, l := range p.shadow {
		results[l.at] = notRead
	}
}
