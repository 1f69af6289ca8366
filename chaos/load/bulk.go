// Package load drives the chaos runs' loads and checks their answers as
// they come: the bulk throughput load (every read checked against its
// writer), the checked clients whose every op goes into the history that
// porcupine checks, the failover probe, and the clients pinned to one
// server.
package load

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batchkv/batchkv/chaos/timeline"
	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/wire"
)

// Bulk is the throughput load. Each goroutine owns keys no other op
// touches and writes them in sequence, so every answer is checked as it
// arrives: a get must return exactly the goroutine's last acknowledged
// write of its key (or nothing before the first). Once a write's outcome
// is unknown its key is no longer used, and the final read of that key
// may return the last acknowledged write or any write of unknown outcome.
type Bulk struct {
	cfg  BulkConfig
	cl   *client.Client
	tl   *timeline.Timeline
	seed uint64
	v    *Violations
	ws   []*bulkWorker
	// pace is the open load's schedule; nil under the closed load.
	pace atomic.Pointer[pacer]
}

// bulkWorker is one goroutine of the load, with the keys it owns.
type bulkWorker struct {
	id    int
	keys  []bulkKey
	names []string
	next  int64 // index of the worker's next write
}

// bulkKey is what a worker knows of one of its keys.
type bulkKey struct {
	acked   int64   // index of the last acknowledged write; -1: none
	tainted bool    // a write's outcome is unknown
	unknown []int64 // indexes of the writes of unknown outcome
}

// NewBulk returns the bulk load of cfg through cl, counted on tl; what its
// checks find goes to v. seed seeds its workers' choices.
func NewBulk(cfg BulkConfig, cl *client.Client, tl *timeline.Timeline, seed uint64, v *Violations) *Bulk {
	b := &Bulk{cfg: cfg, cl: cl, tl: tl, seed: seed, v: v}
	for g := range cfg.Goroutines {
		w := &bulkWorker{id: g, keys: make([]bulkKey, cfg.Keys), names: make([]string, cfg.Keys)}
		for i := range w.keys {
			w.keys[i].acked = -1
			w.names[i] = fmt.Sprintf("b%03d-%05d", g, i)
		}
		b.ws = append(b.ws, w)
	}
	return b
}

// value returns write idx of worker g, padded to the value size.
func (b *Bulk) value(g int, idx int64) string {
	v := "g" + strconv.Itoa(g) + "-w" + strconv.FormatInt(idx, 10) + "|"
	if n := b.cfg.ValueSize - len(v); n > 0 {
		v += strings.Repeat(".", n)
	}
	return v
}

// index parses the write index out of a value of worker g.
func index(g int, v string) (int64, bool) {
	rest, ok := strings.CutPrefix(v, "g"+strconv.Itoa(g)+"-w")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, "|")
	if !ok {
		return 0, false
	}
	idx, err := strconv.ParseInt(num, 10, 64)
	return idx, err == nil
}

// Run drives every worker until stop is closed.
func (b *Bulk) Run(stop <-chan struct{}) {
	var wg sync.WaitGroup
	for _, w := range b.ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.work(w, stop)
		}()
	}
	wg.Wait()
}

// work sends worker w's batches until stop is closed.
func (b *Bulk) work(w *bulkWorker, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(b.seed, uint64(w.id)))
	ops := make([]wire.Op, 0, b.cfg.Batch)
	slots := make([]int, 0, b.cfg.Batch)
	for {
		select {
		case <-stop:
			return
		default:
		}
		due, ok := b.nextDue(stop)
		if !ok {
			return
		}
		ops, slots = ops[:0], slots[:0]
		start := rng.IntN(len(w.keys))
		for j := 0; j < b.cfg.Batch && j < len(w.keys); j++ {
			k := (start + j) % len(w.keys)
			if w.keys[k].tainted {
				continue
			}
			slots = append(slots, k)
			if rng.Float64() < b.cfg.Reads {
				ops = append(ops, wire.Op{Code: wire.OpGet, Key: w.names[k]})
			} else {
				ops = append(ops, wire.Op{Code: wire.OpPut, Key: w.names[k], Value: b.value(w.id, w.next)})
				w.next++
			}
		}
		if len(ops) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := b.cl.Do(ctx, ops)
		took := time.Since(due)
		cancel()
		failed := 0
		for j, op := range ops {
			r := res[j]
			if !r.Status.Applied() {
				failed++
			}
			b.check(w, slots[j], op, r, err)
		}
		b.tl.Batch(len(ops)-failed, failed, took)
	}
}

// check folds one answered op into what the worker knows of its key.
func (b *Bulk) check(w *bulkWorker, slot int, op wire.Op, r wire.Result, err error) {
	k := &w.keys[slot]
	switch {
	case op.Code == wire.OpPut && r.Status.Applied():
		idx, _ := index(w.id, op.Value)
		k.acked = idx
	case op.Code == wire.OpPut:
		// Unknown, or unavailable with err set: it may have been applied.
		idx, _ := index(w.id, op.Value)
		k.tainted = true
		k.unknown = append(k.unknown, idx)
	case r.Status.Applied():
		if why := b.judge(w, slot, r.Status == wire.StatusOK, r.Value); why != "" {
			b.v.Add(fmt.Sprintf("bulk get %s: %s", op.Key, why))
		}
	}
}

// judge returns why a read of a worker's untainted key that found value
// (or nothing) is wrong, or "".
func (b *Bulk) judge(w *bulkWorker, slot int, found bool, value string) string {
	k := &w.keys[slot]
	if !found {
		if k.acked >= 0 {
			return fmt.Sprintf("missing, but write %d was acknowledged", k.acked)
		}
		return ""
	}
	idx, ok := index(w.id, value)
	switch {
	case !ok:
		return fmt.Sprintf("returned %.40q, which no write of this key wrote", value)
	case idx != k.acked && !k.tainted:
		return fmt.Sprintf("returned write %d, but the last acknowledged write is %d", idx, k.acked)
	}
	return ""
}

// FinalCheck reads every key after the run and checks that no
// acknowledged write is missing. It returns the number of keys read.
func (b *Bulk) FinalCheck(ctx context.Context, cl *client.Client) (int, error) {
	var n atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, w := range b.ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for from := 0; from < len(w.names); from += 512 {
				to := min(from+512, len(w.names))
				ops := make([]wire.Op, 0, to-from)
				for _, name := range w.names[from:to] {
					ops = append(ops, wire.Op{Code: wire.OpGet, Key: name})
				}
				res, err := cl.Do(ctx, ops)
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, fmt.Errorf("final read: %w", err))
					mu.Unlock()
					return
				}
				for j := range ops {
					b.final(w, from+j, res[j])
				}
				n.Add(int64(len(ops)))
			}
		}()
	}
	wg.Wait()
	return int(n.Load()), firstErr
}

// final checks the final read of one key.
func (b *Bulk) final(w *bulkWorker, slot int, r wire.Result) {
	k := &w.keys[slot]
	name := w.names[slot]
	found := r.Status == wire.StatusOK
	if !k.tainted {
		if why := b.judge(w, slot, found, r.Value); why != "" {
			b.v.Add(fmt.Sprintf("final read %s: %s", name, why))
		}
		return
	}
	if !found {
		if k.acked >= 0 {
			b.v.Add(fmt.Sprintf("final read %s: missing, but write %d was acknowledged", name, k.acked))
		}
		return
	}
	idx, ok := index(w.id, r.Value)
	if ok && (idx == k.acked || slices.Contains(k.unknown, idx)) {
		return
	}
	b.v.Add(fmt.Sprintf("final read %s: returned %.40q; acknowledged %d, unknown %v", name, r.Value, k.acked, k.unknown))
}

// cmpErr keeps the first error.
func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}
