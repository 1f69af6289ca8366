package kvs

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/ring"
	"github.com/batchkv/batchkv/wire"
)

// forwardTimeout bounds an op forwarded to the server that owns it.
const forwardTimeout = 10 * time.Second

// Service implements the RPCs: BatchOp, and the course skeleton's Get and
// Put. Its exported methods have net/rpc's shape; they return an error only
// for what the transport must carry (a rejected legacy call), and put the
// outcome of each op in the reply.
type Service struct {
	store Store
	stats *Stats
	ring  *ring.Ring     // nil for a server that owns every key
	self  int            // our index in ring
	fwd   *client.Client // to the other servers; nil when ring is nil
	repl  *replication   // nil unless replicated
	// layout is what KVService.Layout answers.
	layout wire.Layout
	// staleReads plants a bug for tests (SetStaleReadsForTest).
	staleReads atomic.Bool

	// valueBytes is the mean value size read by the last batch, plus one:
	// the next batch sizes its value buffer from it.
	valueBytes atomic.Uint64
}

// valueBufSize guesses the bytes of values that a batch with gets gets
// will read, from the last batch's mean; append grows the buffer beyond
// this first allocation when needed.
func (s *Service) valueBufSize(gets uint64) int {
	per := s.valueBytes.Load()
	if per == 0 {
		per = 64
	}
	return int(min(gets*per, maxValueBuf))
}

const (
	// maxValueBuf caps the first allocation of a batch's value buffer.
	maxValueBuf = 4 << 20
	// maxReplyValues caps the bytes of values one batch may read, so that
	// its reply fits in a frame (wire.MaxFrameBytes, with room for the
	// results' headers). Gets past it answer StatusTooLarge: without it,
	// 65,536 gets of one 1 MiB value would make the server build a 64 GiB
	// reply.
	maxReplyValues = wire.MaxFrameBytes - 1<<20
)

// aliasString returns b as a string without copying it. The caller must
// never modify b's bytes again; append beyond them is fine.
func aliasString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// BatchOp applies args.Ops in order and answers one result per op.
//
// A batch routed with this server's ring (args.RingID equal to its ID) is
// applied as is. A batch with RingID 0 is unrouted: ops this server owns
// are applied here and the rest are forwarded to their owners. A batch
// routed with some other ring is rejected whole with StatusWrongRing, since
// applying it could put a key on a server that does not own it.
func (s *Service) BatchOp(args *wire.BatchArgs, reply *wire.BatchReply) error {
	s.stats.recordBatch(len(args.Ops))
	reply.Results = nil
	switch {
	case len(args.Ops) > wire.MaxBatchOps:
		reply.Status = wire.StatusTooLarge
		reply.Err = fmt.Sprintf("%d ops in one batch, limit %d", len(args.Ops), wire.MaxBatchOps)
		s.stats.Rejected.Add(uint64(len(args.Ops)))
		s.stats.Results[wire.StatusTooLarge].Add(uint64(len(args.Ops)))
		return nil
	case s.repl != nil:
		s.replicatedBatch(args, reply)
		return nil
	case s.ring == nil || args.RingID == s.ring.ID():
		reply.Results = make([]wire.Result, len(args.Ops))
		s.apply(args.Ops, reply.Results)
	case args.RingID != 0:
		reply.Status = wire.StatusWrongRing
		reply.Err = fmt.Sprintf("batch routed with ring %016x; this server's ring is %016x over %v",
			args.RingID, s.ring.ID(), s.ring.Nodes())
		s.stats.Results[wire.StatusWrongRing].Add(uint64(len(args.Ops)))
		return nil
	default:
		reply.Results = make([]wire.Result, len(args.Ops))
		s.route(args.Ops, reply.Results)
	}
	s.stats.countResults(reply.Results)
	reply.Status = wire.StatusOK
	return nil
}

// apply applies ops to the local store, in order, writing their results.
func (s *Service) apply(ops []wire.Op, results []wire.Result) { s.applyTo(s.store, ops, results) }

// applyTo applies ops to store, in order, writing their results. The
// values read are copied into one buffer per call, which the results'
// values alias.
func (s *Service) applyTo(store Store, ops []wire.Op, results []wire.Result) {
	var gets, puts, dels, rejected uint64
	for i := range ops {
		switch {
		case ops[i].Check() != wire.StatusOK:
			rejected++
		case ops[i].Code == wire.OpGet:
			gets++
		case ops[i].Code == wire.OpPut:
			puts++
		default:
			dels++
		}
	}
	vals := make([]byte, 0, s.valueBufSize(gets))
	if bs, ok := store.(BatchStore); ok && rejected == 0 {
		vals = bs.ApplyBatch(ops, results, vals, maxReplyValues)
	} else {
		vals = applyEach(store, ops, results, vals)
	}
	if gets > 0 {
		s.valueBytes.Store(uint64(len(vals))/gets + 1)
	}
	// One atomic add per counter per batch, not per op.
	if gets > 0 {
		s.stats.Gets.Add(gets)
	}
	if puts > 0 {
		s.stats.Puts.Add(puts)
	}
	if dels > 0 {
		s.stats.Deletes.Add(dels)
	}
	if rejected > 0 {
		s.stats.Rejected.Add(rejected)
	}
}

// applyEach applies ops one by one, in order, and returns vals with the
// values read appended.
func applyEach(store Store, ops []wire.Op, results []wire.Result, vals []byte) []byte {
	for i := range ops {
		op := &ops[i]
		if st := op.Check(); st != wire.StatusOK {
			results[i] = wire.Result{Status: st}
			continue
		}
		switch op.Code {
		case wire.OpGet:
			start := len(vals)
			var ok bool
			switch vals, ok = store.AppendGet(vals, op.Key); {
			case ok && len(vals) > maxReplyValues:
				vals = vals[:start]
				results[i] = wire.Result{Status: wire.StatusTooLarge}
			case ok:
				results[i] = wire.Result{Status: wire.StatusOK, Value: aliasString(vals[start:])}
			default:
				results[i] = wire.Result{Status: wire.StatusNotFound}
			}
		case wire.OpPut:
			store.Put(op.Key, op.Value)
			results[i] = wire.Result{Status: wire.StatusOK}
		case wire.OpDelete:
			store.Delete(op.Key)
			results[i] = wire.Result{Status: wire.StatusOK}
		}
	}
	return vals
}

// route applies the ops this server owns and forwards the rest. Ops on one
// key all go the same way, so they keep their batch order.
func (s *Service) route(ops []wire.Op, results []wire.Result) {
	var local, remote []wire.Op
	var localAt, remoteAt []int
	for i := range ops {
		if ops[i].Check() != wire.StatusOK || s.ring.Owner(ops[i].Key) == s.self {
			local = append(local, ops[i])
			localAt = append(localAt, i)
		} else {
			remote = append(remote, ops[i])
			remoteAt = append(remoteAt, i)
		}
	}
	sub := make([]wire.Result, len(local))
	s.apply(local, sub)
	for j, i := range localAt {
		results[i] = sub[j]
	}
	if len(remote) == 0 {
		return
	}
	s.stats.Forwarded.Add(uint64(len(remote)))
	ctx, cancel := context.WithTimeout(context.Background(), forwardTimeout)
	defer cancel()
	sub = make([]wire.Result, len(remote))
	// On error, DoInto has already marked the failed ops unavailable.
	_ = s.fwd.DoInto(ctx, remote, sub)
	for j, i := range remoteAt {
		results[i] = sub[j]
	}
}

// one applies or forwards a single op for the legacy RPCs.
func (s *Service) one(op wire.Op) (wire.Result, error) {
	s.stats.recordBatch(1)
	if st := op.Check(); st != wire.StatusOK {
		s.stats.Rejected.Add(1)
		s.stats.Results[st].Add(1)
		return wire.Result{}, fmt.Errorf("kvs: %s of key %.40q rejected: %s (limits: key %d bytes, value %d bytes)",
			op.Code, op.Key, st, wire.MaxKeyBytes, wire.MaxValueBytes)
	}
	results := make([]wire.Result, 1)
	ops := []wire.Op{op}
	if s.repl != nil {
		s.forward(ops, results)
	} else if s.ring == nil {
		s.apply(ops, results)
	} else {
		s.route(ops, results)
	}
	s.stats.countResults(results)
	if !results[0].Status.Applied() {
		return results[0], fmt.Errorf("kvs: %s of key %.40q: %s", op.Code, op.Key, results[0].Status)
	}
	return results[0], nil
}

// Get is the course skeleton's read: a missing key reads as "".
func (s *Service) Get(req *wire.GetRequest, resp *wire.GetResponse) error {
	res, err := s.one(wire.Op{Code: wire.OpGet, Key: req.Key})
	resp.Value = res.Value
	return err
}

// Put is the course skeleton's write.
func (s *Service) Put(req *wire.PutRequest, _ *wire.PutResponse) error {
	_, err := s.one(wire.Op{Code: wire.OpPut, Key: req.Key, Value: req.Value})
	return err
}

// Layout answers how this cluster places keys (see client.Discover).
func (s *Service) Layout(_ *wire.LayoutRequest, resp *wire.Layout) error {
	*resp = s.layout
	return nil
}

// Status answers this server's view of the shards it replicates.
func (s *Service) Status(req *wire.StatusRequest, resp *wire.StatusReply) error {
	resp.Layout = s.layout
	if s.repl != nil {
		resp.Self = s.repl.self
		resp.Shards = s.repl.status(req.Digest)
	}
	return nil
}
