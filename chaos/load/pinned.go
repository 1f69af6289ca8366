package load

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/rpc"
	"time"

	"github.com/batchkv/batchkv/internal/linz"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// Pinned sends checked batches for one shard to one server only, with a
// long timeout and no redirects, so that whatever that server answers,
// also after a pause or a partition, lands in the history. Its acks are
// kept to tell when the server stopped acknowledging writes.
type Pinned struct {
	server string
	layout *shard.Layout
	shard  int
	keys   []string
	Acks   AckLog // write batches acknowledged
}

// NewPinned returns the pinned client of server, for shard sh of layout,
// on those of the first nkeys checked keys that sh holds.
func NewPinned(server string, layout *shard.Layout, sh, nkeys int) *Pinned {
	p := &Pinned{server: server, layout: layout, shard: sh}
	for _, k := range CheckedKeys(nkeys) {
		if layout.Shard(k) == sh {
			p.keys = append(p.keys, k)
		}
	}
	return p
}

// Run sends the batches of client PinnedClient+id until stop is closed.
func (p *Pinned) Run(id int, h *linz.History, seed uint64, stop <-chan struct{}) {
	if len(p.keys) == 0 {
		return
	}
	rng := rand.New(rand.NewPCG(seed, uint64(1<<40+id)))
	session := rng.Uint64() | 1
	var rc *rpc.Client
	defer func() {
		if rc != nil {
			_ = rc.Close()
		}
	}()
	for b := 0; ; b++ {
		select {
		case <-stop:
			return
		case <-time.After(5 * time.Millisecond):
		}
		if rc == nil {
			conn, err := net.DialTimeout("tcp", p.server, time.Second)
			if err != nil {
				continue
			}
			cc, err := wire.NewClientCodec(conn)
			if err != nil {
				_ = conn.Close()
				continue
			}
			rc = rpc.NewClientWithCodec(cc)
		}
		ops := linz.RandomBatch(rng, id, b, p.keys, 3)
		args := wire.BatchArgs{RingID: p.layout.ID(), Shard: uint32(p.shard), Session: session, Seq: uint64(b + 1), Ops: ops}
		var reply wire.BatchReply
		call := h.Now()
		c := rc.Go(wire.BatchOpMethod, &args, &reply, make(chan *rpc.Call, 1))
		var err error
		select {
		case <-c.Done:
			err = c.Error
		case <-time.After(10 * time.Second):
			err = fmt.Errorf("no reply in 10s")
		}
		ret := h.Now()
		// reply is read only once the call is done: after a timeout the
		// client's reading goroutine may still be decoding into it.
		var results []wire.Result
		if err == nil {
			results = reply.Results
			if reply.Status != wire.StatusOK || len(results) != len(ops) {
				err = fmt.Errorf("rejected: %s", reply.Status)
			}
		}
		if err != nil {
			_ = rc.Close()
			rc = nil
			results = make([]wire.Result, len(ops))
			for i := range results {
				results[i].Status = wire.StatusUnknown
			}
		}
		h.Record(PinnedClient+id, ops, results, err, call, ret)
		if err == nil && hasAckedWrite(ops, results) {
			p.Acks.add(call, ret)
		}
	}
}

// hasAckedWrite says whether a write among ops was applied.
func hasAckedWrite(ops []wire.Op, results []wire.Result) bool {
	for i, op := range ops {
		if op.Code != wire.OpGet && results[i].Status.Applied() {
			return true
		}
	}
	return false
}
