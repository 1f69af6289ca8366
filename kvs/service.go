package kvs

import (
	"errors"
	"fmt"

	"github.com/batchkv/batchkv/kvs/backend"
	"github.com/batchkv/batchkv/kvs/stats"
	"github.com/batchkv/batchkv/wire"
)

// Service implements the RPCs: BatchOp, the course skeleton's Get and
// Put, Layout and Status. Its exported methods have net/rpc's shape; they
// return an error only for what the transport must carry (a rejected
// legacy call), and put the outcome of each op in the reply. It checks
// limits and counts; its backend applies.
type Service struct {
	backend backend.Backend
	stats   *stats.Stats
	// layout is what KVService.Layout answers, unless the server is
	// replicated: then its current shard map.
	layout wire.ClusterMap
	// self is this server's address as peers reach it; "" if not given.
	self string
	// calls finds the call of a request's decoded arguments; nil for a
	// Service built by hand (benchmarks), whose calls are charged nothing.
	calls func(args any) *call
	// node reads the server's counters for Status; nil for a Service
	// built by hand.
	node func() *wire.NodeStats
}

// callOf returns the call of args, or nil.
func (s *Service) callOf(args any) *call {
	if s.calls == nil {
		return nil
	}
	return s.calls(args)
}

// BatchOp applies args.Ops in order and answers one result per op. A
// server's connections serve it without net/rpc (serverCodec.serveDirect);
// it is registered so that net/rpc knows the method, and a caller of the
// Service itself (a test) may call it.
func (s *Service) BatchOp(args *wire.BatchArgs, reply *wire.BatchReply) error {
	s.batch(args, reply, s.callOf(args))
	return nil
}

// batch serves a batch whose reply values are charged to cl (nil: to
// nothing): a BatchOp, or a RESP connection's commands.
func (s *Service) batch(args *wire.BatchArgs, reply *wire.BatchReply, cl *call) {
	s.stats.RecordBatch(len(args.Ops))
	reply.Results = nil
	if len(args.Ops) > wire.MaxBatchOps {
		reply.Status = wire.StatusTooLarge
		reply.Err = fmt.Sprintf("%d ops in one batch, limit %d", len(args.Ops), wire.MaxBatchOps)
		s.stats.Rejected.Add(uint64(len(args.Ops)))
		s.stats.Results[wire.StatusTooLarge].Add(uint64(len(args.Ops)))
		return
	}
	s.backend.Batch(args, reply, cl.charges())
	if reply.Status != wire.StatusOK {
		s.stats.Results[reply.Status%stats.NumStatuses].Add(uint64(len(args.Ops)))
		return
	}
	s.stats.CountResults(reply.Results)
}

// one serves a single op for the legacy RPCs.
func (s *Service) one(op wire.Op, cl *call) (wire.Result, error) {
	s.stats.RecordBatch(1)
	if st := op.Check(); st != wire.StatusOK {
		s.stats.Rejected.Add(1)
		s.stats.Results[st].Add(1)
		return wire.Result{}, fmt.Errorf("kvs: %s of key %.40q rejected: %s (limits: key %d bytes, value %d bytes)",
			op.Code, op.Key, st, wire.MaxKeyBytes, wire.MaxValueBytes)
	}
	res := s.backend.One(op, cl.charges())
	s.stats.CountResults([]wire.Result{res})
	if !res.Status.Applied() {
		return res, fmt.Errorf("kvs: %s of key %.40q: %s", op.Code, op.Key, res.Status)
	}
	return res, nil
}

// Get is the course skeleton's read: a missing key reads as "".
func (s *Service) Get(req *wire.GetRequest, resp *wire.GetResponse) error {
	res, err := s.one(wire.Op{Code: wire.OpGet, Key: req.Key}, s.callOf(req))
	resp.Value = res.Value
	return err
}

// Put is the course skeleton's write.
func (s *Service) Put(req *wire.PutRequest, _ *wire.PutResponse) error {
	_, err := s.one(wire.Op{Code: wire.OpPut, Key: req.Key, Value: req.Value}, s.callOf(req))
	return err
}

// Layout answers how this cluster places keys (see client.Discover).
func (s *Service) Layout(req *wire.LayoutRequest, resp *wire.ClusterMap) error {
	s.callOf(req)
	*resp = s.currentLayout()
	return nil
}

// currentLayout is the layout this server routes with now: a replicated
// server's current shard map.
func (s *Service) currentLayout() wire.ClusterMap {
	if rb, ok := s.backend.(*backend.Replicated); ok {
		return rb.Set().Map().Wire()
	}
	return s.layout
}

// Status answers this server's view of the shards it replicates.
func (s *Service) Status(req *wire.StatusRequest, resp *wire.StatusReply) error {
	s.callOf(req)
	resp.Layout = s.currentLayout()
	resp.Self = s.self
	if rb, ok := s.backend.(*backend.Replicated); ok {
		resp.Disk, resp.Stores = rb.Set().Disk(), rb.StoreStats()
	}
	if req.DiskOnly {
		return nil
	}
	resp.Shards = s.backend.Shards(req.Digest)
	if s.node != nil {
		resp.Node = s.node()
	}
	return nil
}

// Membership makes one step of a shard move on this server (see
// wire.MembershipOp and package membership, which drives the steps). An
// op that must run at a leader answers NotLeader, with the leader it
// knows, elsewhere. With TLS, only callers with a certificate of the
// cluster's CA get here, as for every RPC, and only admin and node
// certificates with an op that changes something (serverCodec).
func (s *Service) Membership(req *wire.MembershipRequest, reply *wire.MembershipReply) error {
	s.callOf(req)
	rb, ok := s.backend.(*backend.Replicated)
	if !ok {
		return errors.New("kvs: membership changes need servers started with -rf above 1, a data dir or -in-memory; this one serves a fixed ring")
	}
	return rb.Membership(req, reply)
}
