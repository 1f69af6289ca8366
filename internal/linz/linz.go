// Package linz checks histories of the store's operations for
// linearizability with porcupine: a model of one key (a history is
// partitioned by key), a recorder that many goroutines append to, and a
// check that writes porcupine's visualization when it finds a violation.
//
// The model knows gets, puts, deletes and conditional puts (wire.OpPutIf:
// compare-and-set, put-if-absent, put-if-present, get-and-set). A
// conditional put is a read and a write in one step: the model decides its
// condition on the key's state at the op's linearization point, and its
// output (written or not, the value found) must agree.
//
// Ops whose outcome the client never learned are recorded as etcd's
// robustness tests do: a write that may have been applied gets an
// open-ended return time, so it may take effect at any point after its
// call; a read that got no answer tells nothing and is left out. A
// conditional put with an unknown outcome, where it takes effect, does
// what its condition says on the state it finds there.
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
	// Cond and Expect are an OpPutIf's.
	Cond   wire.Cond
	Expect string
}

// Output is what a get or a conditional put returned; other writes have
// the zero Output.
type Output struct {
	// Value and Found: the value the key held (for a conditional put,
	// when its condition was decided) and whether it held one.
	Value string
	Found bool
	// Written says a conditional put's condition held.
	Written bool
	// Unknown says a conditional put's outcome was never learned.
	Unknown bool
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
		case wire.OpPutIf:
			out := output.(Output)
			op := wire.Op{Code: in.Code, Cond: in.Cond, Key: in.Key, Expect: in.Expect, Value: in.Value}
			st := op.Decide(s.value, s.exists)
			next := s
			if st.Applied() {
				next = state{value: in.Value, exists: true}
			}
			if out.Unknown {
				return true, next
			}
			return out.Written == st.Applied() && out.Found == s.exists && out.Value == s.value, next
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
	case wire.OpPutIf:
		call := fmt.Sprintf("put-if-%s(%s, %s)", in.Cond, in.Key, in.Value)
		if in.Cond == wire.CondEqual {
			call = fmt.Sprintf("cas(%s, %s -> %s)", in.Key, in.Expect, in.Value)
		}
		found := "missing"
		if out.Found {
			found = out.Value
		}
		switch {
		case out.Unknown:
			return call + " -> ?"
		case out.Written:
			return fmt.Sprintf("%s -> written, was %s", call, found)
		}
		return fmt.Sprintf("%s -> not written, is %s", call, found)
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
		if op.Code == wire.OpPutIf {
			in.Cond, in.Expect = op.Cond, op.Expect
		}
		r := results[i]
		switch {
		case r.Status.Decided():
			h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Return: ret,
				Output: Output{Value: r.Value, Found: r.Status.Present(), Written: op.Code == wire.OpPutIf && r.Status.Applied()}})
		case op.Code != wire.OpGet && (r.Status == wire.StatusUnavail || r.Status == wire.StatusUnknown):
			h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Return: Unknown,
				Output: Output{Unknown: op.Code == wire.OpPutIf}})
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

// CASBatch is RandomBatch with conditional puts: 1 to maxOps ops over
// keys, 40% gets, 20% puts, 5% deletes, 20% compare-and-sets from the
// value this client last saw of the key (seen, kept by Observe; an unseen
// key's CAS expects "", which no written value is), and 5% each of
// put-if-absent, put-if-present and get-and-set. Written values are
// unique.
func CASBatch(rng *rand.Rand, id, b int, keys []string, maxOps int, seen map[string]string) []wire.Op {
	ops := make([]wire.Op, 1+rng.IntN(maxOps))
	for i := range ops {
		key := keys[rng.IntN(len(keys))]
		value := fmt.Sprintf("c%d-b%d-o%d", id, b, i)
		switch p := rng.IntN(20); {
		case p < 8:
			ops[i] = wire.Op{Code: wire.OpGet, Key: key}
		case p < 12:
			ops[i] = wire.Op{Code: wire.OpPut, Key: key, Value: value}
		case p < 13:
			ops[i] = wire.Op{Code: wire.OpDelete, Key: key}
		case p < 17:
			ops[i] = wire.Op{Code: wire.OpPutIf, Cond: wire.CondEqual, Key: key, Expect: seen[key], Value: value}
		default:
			cond := []wire.Cond{wire.CondAbsent, wire.CondPresent, wire.CondAlways}[p-17]
			ops[i] = wire.Op{Code: wire.OpPutIf, Cond: cond, Key: key, Value: value}
		}
	}
	return ops
}

// Observe notes in seen what a batch's answered ops tell of their keys:
// the values gets read, puts wrote, and conditional puts wrote or found.
func Observe(seen map[string]string, ops []wire.Op, results []wire.Result) {
	for i := range ops {
		op, r := &ops[i], results[i]
		switch {
		case !r.Status.Decided():
		case op.Code == wire.OpPut || op.Code == wire.OpPutIf && r.Status.Applied():
			seen[op.Key] = op.Value
		case op.Code == wire.OpDelete || !r.Status.Present():
			delete(seen, op.Key)
		default: // a get that found the key, or a conditional put that did not write
			seen[op.Key] = r.Value
		}
	}
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
	drive(clients, maxOps, keys, pace, attempt, do, h, seed, stop, answered, false)
}

// DriveCAS is Drive with CASBatch batches: conditional puts among the
// gets, puts and deletes, each client's compare-and-sets expecting the
// values it last saw.
func DriveCAS(clients, maxOps int, keys []string, pace, attempt time.Duration, do DoFunc, h *History, seed uint64,
	stop <-chan struct{}, answered func(ops int)) {
	drive(clients, maxOps, keys, pace, attempt, do, h, seed, stop, answered, true)
}

func drive(clients, maxOps int, keys []string, pace, attempt time.Duration, do DoFunc, h *History, seed uint64,
	stop <-chan struct{}, answered func(ops int), cas bool) {
	var wg sync.WaitGroup
	for id := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(1<<32+id)))
			seen := map[string]string{}
			for b := 0; ; b++ {
				next := time.Now().Add(pace)
				select {
				case <-stop:
					return
				default:
				}
				var ops []wire.Op
				if cas {
					ops = CASBatch(rng, id, b, keys, maxOps, seen)
				} else {
					ops = RandomBatch(rng, id, b, keys, maxOps)
				}
				ctx, cancel := context.WithTimeout(context.Background(), attempt)
				call := h.Now()
				res, err := do(ctx, ops)
				h.Record(id, ops, res, err, call, h.Now())
				if cas && len(res) == len(ops) {
					Observe(seen, ops, res)
				}
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
