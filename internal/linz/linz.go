// Package linz checks histories of the store's operations for
// linearizability with porcupine: a model of one key (a history is
// partitioned by key), a recorder that many goroutines append to, and a
// check that writes porcupine's visualization when it finds a violation.
//
// Ops whose outcome the client never learned are recorded as etcd's
// robustness tests do: a write that may have been applied gets an
// open-ended return time, so it may take effect at any point after its
// call; a read that got no answer tells nothing and is left out.
package linz

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/batchkv/batchkv/wire"
)

// Input is an op as the model sees it.
type Input struct {
	Code       wire.OpCode
	Key, Value string
}

// Output is what a get returned; writes have the zero Output.
type Output struct {
	Value string
	Found bool
}

type state struct {
	value  string
	exists bool
}

// Model is porcupine's model of the store, partitioned by key.
var Model = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(Input).Key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		parts := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, byKey[k])
		}
		return parts
	},
	Init: func() any { return state{} },
	Step: func(st, input, output any) (bool, any) {
		s, in := st.(state), input.(Input)
		switch in.Code {
		case wire.OpGet:
			out := output.(Output)
			return out.Found == s.exists && out.Value == s.value, s
		case wire.OpPut:
			return true, state{value: in.Value, exists: true}
		default: // delete
			return true, state{}
		}
	},
	DescribeOperation: func(input, output any) string { return Describe(input.(Input), output.(Output)) },
	DescribeState: func(st any) string {
		s := st.(state)
		if !s.exists {
			return "missing"
		}
		return s.value
	},
}

// Describe renders one op and its output.
func Describe(in Input, out Output) string {
	switch in.Code {
	case wire.OpGet:
		if !out.Found {
			return fmt.Sprintf("get(%s) -> missing", in.Key)
		}
		return fmt.Sprintf("get(%s) -> %s", in.Key, out.Value)
	case wire.OpPut:
		return fmt.Sprintf("put(%s, %s)", in.Key, in.Value)
	}
	return fmt.Sprintf("delete(%s)", in.Key)
}

// History collects porcupine operations from many goroutines, with times
// in nanoseconds since it was made.
type History struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation // guarded by mu
}

// NewHistory returns an empty history whose clock starts now.
func NewHistory() *History { return &History{start: time.Now()} }

// Start is when the history's clock started.
func (h *History) Start() time.Time { return h.start }

// Now is the history's clock.
func (h *History) Now() int64 { return int64(time.Since(h.start)) }

// Unknown is the return time of a write whose outcome is unknown.
const Unknown = math.MaxInt64

// Record adds the ops of one batch, called at call and answered at ret,
// with the results the client returned and its error. Each op's result
// stands on its own: a batch split over shards can fail in one part
// (err is set) while its other parts were applied, and an applied write
// left out of the history would make a later read of it look wrong.
func (h *History) Record(client int, ops []wire.Op, results []wire.Result, _ error, call, ret int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, op := range ops {
		in := Input{Code: op.Code, Key: op.Key, Value: op.Value}
		r := results[i]
		switch {
		case r.Status.Applied():
			h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Return: ret,
				Output: Output{Value: r.Value, Found: r.Status == wire.StatusOK}})
		case op.Code != wire.OpGet && (r.Status == wire.StatusUnavail || r.Status == wire.StatusUnknown):
			h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Return: Unknown,
				Output: Output{}})
		}
	}
}

// Ops returns a copy of the recorded operations.
func (h *History) Ops() []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]porcupine.Operation(nil), h.ops...)
}

// Check runs porcupine over ops for at most timeout. When the history is
// not linearizable and htmlPath is not empty, it writes porcupine's
// visualization of the violation there.
func Check(ops []porcupine.Operation, timeout time.Duration, htmlPath string) (porcupine.CheckResult, error) {
	res, info := porcupine.CheckOperationsVerbose(Model, ops, timeout)
	if res == porcupine.Illegal && htmlPath != "" {
		if err := porcupine.VisualizePath(Model, info, htmlPath); err != nil {
			return res, fmt.Errorf("linz: visualization: %w", err)
		}
	}
	return res, nil
}

// RandomBatch returns batch b of client id: 1 to maxOps ops over keys,
// half gets, 40% puts and 10% deletes. Put values are unique, so every
// read identifies the write it saw.
func RandomBatch(rng *rand.Rand, id, b int, keys []string, maxOps int) []wire.Op {
	ops := make([]wire.Op, 1+rng.IntN(maxOps))
	for i := range ops {
		key := keys[rng.IntN(len(keys))]
		switch p := rng.IntN(10); {
		case p < 5:
			ops[i] = wire.Op{Code: wire.OpGet, Key: key}
		case p < 9:
			ops[i] = wire.Op{Code: wire.OpPut, Key: key, Value: fmt.Sprintf("c%d-b%d-o%d", id, b, i)}
		default:
			ops[i] = wire.Op{Code: wire.OpDelete, Key: key}
		}
	}
	return ops
}

// DoFunc sends one batch and returns its results, as client.Client.Do.
type DoFunc func(ctx context.Context, ops []wire.Op) ([]wire.Result, error)

// Drive is a checked load: clients goroutines, ids 0 to clients-1, each
// sending RandomBatch batches of 1 to maxOps ops over keys through do,
// at most one batch per pace, every batch recorded in h, until stop is
// closed. Each batch has attempt to be answered; answered, if not nil, is
// called with the size of each batch answered without error. Drive
// returns when every client has stopped.
func Drive(clients, maxOps int, keys []string, pace, attempt time.Duration, do DoFunc, h *History, seed uint64,
	stop <-chan struct{}, answered func(ops int)) {
	var wg sync.WaitGroup
	for id := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(1<<32+id)))
			for b := 0; ; b++ {
				next := time.Now().Add(pace)
				select {
				case <-stop:
					return
				default:
				}
				ops := RandomBatch(rng, id, b, keys, maxOps)
				ctx, cancel := context.WithTimeout(context.Background(), attempt)
				call := h.Now()
				res, err := do(ctx, ops)
				h.Record(id, ops, res, err, call, h.Now())
				cancel()
				if err == nil && answered != nil {
					answered(len(ops))
				}
				if wait := time.Until(next); wait > 0 {
					select {
					case <-stop:
						return
					case <-time.After(wait):
					}
				}
			}
		}()
	}
	wg.Wait()
}
