package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/rpc"
	"sync"
	"time"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/linz"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// CheckedConfig sizes the checked load: clients whose every op goes into
// the history that porcupine checks.
type CheckedConfig struct {
	Clients int // concurrent clients
	Keys    int // shared keys, so clients contend
	MaxOps  int // ops per batch, 1 to MaxOps
}

// Client ids in the history.
const (
	probeClient  = 1000 // the failover probe
	pinnedClient = 2000 // clients that talk to one server only
	finalClient  = 3000 // the final reads
)

// checkedKeys names the n checked keys.
func checkedKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("c%04d", i)
	}
	return keys
}

// runChecked runs the checked clients until stop is closed.
func runChecked(cfg CheckedConfig, cl *client.Client, h *linz.History, tl *timeline, seed uint64, stop <-chan struct{}) {
	linz.Drive(cfg.Clients, cfg.MaxOps, checkedKeys(cfg.Keys), 0, 5*time.Second, cl.Do, h, seed, stop, tl.checkedOps)
}

// probe writes one key of a shard every 10ms, each write recorded in the
// history, and remembers when each was called and acknowledged, to time
// failovers: the first write called after a fault that succeeds.
type probe struct {
	key  string
	acks ackLog
}

// ackLog remembers when acknowledged writes were called and answered.
type ackLog struct {
	mu   sync.Mutex
	acks []ack // guarded by mu
}

type ack struct{ call, ret time.Duration }

func (l *ackLog) add(call, ret int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acks = append(l.acks, ack{call: time.Duration(call), ret: time.Duration(ret)})
}

// firstAckAfter returns how long after t the first write called at or
// after t was acknowledged, or false if none was.
func (l *ackLog) firstAckAfter(t time.Duration) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range l.acks {
		if a.call >= t {
			return a.ret - t, true
		}
	}
	return 0, false
}

// lastAckIn returns the last time in [from, to) a write called at or
// after calledFrom was acknowledged, or false if none was.
func (l *ackLog) lastAckIn(calledFrom, from, to time.Duration) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var last time.Duration
	found := false
	for _, a := range l.acks {
		if a.call >= calledFrom && a.ret >= from && a.ret < to {
			last, found = a.ret, true
		}
	}
	return last, found
}

func newProbe(layout *shard.Layout, sh int) *probe {
	for i := 0; ; i++ {
		if k := fmt.Sprintf("probe%d", i); layout.Shard(k) == sh {
			return &probe{key: k}
		}
	}
}

func (p *probe) run(cl *client.Client, h *linz.History, stop <-chan struct{}) {
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		case <-time.After(10 * time.Millisecond):
		}
		ops := []wire.Op{{Code: wire.OpPut, Key: p.key, Value: fmt.Sprintf("probe-%d", n)}}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		call := h.Now()
		res, err := cl.Do(ctx, ops)
		ret := h.Now()
		cancel()
		h.Record(probeClient, ops, res, err, call, ret)
		if err == nil && res[0].Status.Applied() {
			p.acks.add(call, ret)
		}
	}
}

// pinned sends checked batches for one shard to one server only, with a
// long timeout and no redirects, so that whatever that server answers,
// also after a pause or a partition, lands in the history. Its acks are
// kept to tell when the server stopped acknowledging writes.
type pinned struct {
	server string
	layout *shard.Layout
	shard  int
	keys   []string
	acks   ackLog // write batches acknowledged
}

func newPinned(server string, layout *shard.Layout, sh, nkeys int) *pinned {
	p := &pinned{server: server, layout: layout, shard: sh}
	for _, k := range checkedKeys(nkeys) {
		if layout.Shard(k) == sh {
			p.keys = append(p.keys, k)
		}
	}
	return p
}

func (p *pinned) run(id int, h *linz.History, seed uint64, stop <-chan struct{}) {
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
		results := reply.Results
		if err == nil && (reply.Status != wire.StatusOK || len(results) != len(ops)) {
			err = fmt.Errorf("rejected: %s", reply.Status)
		}
		if err != nil {
			_ = rc.Close()
			rc = nil
			results = make([]wire.Result, len(ops))
			for i := range results {
				results[i].Status = wire.StatusUnknown
			}
		}
		h.Record(pinnedClient+id, ops, results, err, call, ret)
		if err == nil && hasAckedWrite(ops, results) {
			p.acks.add(call, ret)
		}
	}
}

func hasAckedWrite(ops []wire.Op, results []wire.Result) bool {
	for i, op := range ops {
		if op.Code != wire.OpGet && results[i].Status.Applied() {
			return true
		}
	}
	return false
}
