package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/busypoll"
	"github.com/batchkv/batchkv/wire"
)

// syncLeg is one way to send a lone op: through the client library as a
// batch of one (Do), through its Put and Get, or as one RESP command to a
// Redis server.
type syncLeg struct {
	via string // "Do", "Put" (Put and Get; printed as Get for gets) or "redis"
	do  func(ctx context.Context, op wire.Op) (wire.Result, error)
}

// syncOptions are -sync-ops's settings.
type syncOptions struct {
	redisAddr string        // a Redis server that is a leg too; empty: none
	lonePoll  time.Duration // the Redis leg's polling limit (-lone-poll)
	n         int           // ops of each kind (puts, then gets)
	block     int           // ops a leg takes in a row before the next leg's turn
	value     string        // what each put writes
}

// syncLatency is the Raft seed's experiment: n synchronous single-op puts
// from one goroutine, then n gets of the same keys, each waiting for the
// previous to return, over keys it loads first, untimed.
//
// Each op goes every way (syncLeg) in turn, in an order that rotates: with
// a block of 1, the i-th put via Do, then via Put, then (with redisAddr)
// as a SET to Redis, then the next put starting one leg later; with a
// block of b, each leg sends b ops in a row before the next leg sends the
// same b. This machine's round trip moves by 2x within seconds, so legs
// timed one after the other (all puts via Do, then all via Put) differ by
// the noise of their minute more than by their code; interleaved, each
// pair of legs sees the same noise and their ratio is the code's. Op by
// op, though, every server sleeps while the other legs' servers answer,
// and wakes cold; a block of some hundreds keeps each hot for its turn,
// as a server alone with its client is, and still shares the noise. It
// prints the latency percentiles of each op and leg.
func syncLatency(ctx context.Context, cl *client.Client, o syncOptions, stdout io.Writer) error {
	n, value := o.n, o.value
	legs := []syncLeg{
		{"Do", func(ctx context.Context, op wire.Op) (wire.Result, error) { return doOne(ctx, cl, op) }},
		{"Put", func(ctx context.Context, op wire.Op) (wire.Result, error) { return libOne(ctx, cl, op) }},
	}
	var rc *respClient
	if o.redisAddr != "" {
		rc = newRESPClient([]string{o.redisAddr}, nil)
		rc.lonePoll = busypoll.New(cmp.Or(o.lonePoll, client.DefaultLonePoll)) // 0 is the library's default
		defer rc.Close()
		legs = append(legs, syncLeg{"redis", func(ctx context.Context, op wire.Op) (wire.Result, error) { return doOne(ctx, rc, op) }})
	}
	key := func(i int) string { return fmt.Sprintf("sync%08d", i) }
	// The keys are loaded first, untimed, into every store the legs
	// reach: a timed put overwrites, and the first op dials no
	// connection.
	for from := 0; from < n; from += 1000 {
		for _, leg := range legs {
			if leg.via == "Put" {
				continue // the same store as Do's
			}
			for i := from; i < min(n, from+1000); i++ {
				if _, err := leg.do(ctx, wire.Op{Code: wire.OpPut, Key: key(i), Value: value}); err != nil {
					return fmt.Errorf("loading the keys via %s: %w", leg.via, err)
				}
			}
		}
	}
	for _, code := range []wire.OpCode{wire.OpPut, wire.OpGet} {
		lat := make([][]time.Duration, len(legs))
		for _, turn := range syncTurns(n, o.block, len(legs)) {
			k := turn.leg
			leg := legs[k]
			for i := turn.from; i < turn.to; i++ {
				op := wire.Op{Code: code, Key: key(i)}
				if code == wire.OpPut {
					op.Value = value
				}
				start := time.Now()
				res, err := leg.do(ctx, op)
				took := time.Since(start)
				if err == nil && code == wire.OpGet && res.Value != value {
					err = fmt.Errorf("got %d bytes, want the %d put", len(res.Value), len(value))
				}
				if err != nil {
					return fmt.Errorf("sync %s via %s %s: %w", code, leg.via, op.Key, err)
				}
				lat[k] = append(lat[k], took)
			}
		}
		for j, leg := range legs {
			l := lat[j]
			slices.Sort(l)
			pct := func(p float64) time.Duration { return l[min(len(l)-1, int(p*float64(len(l))))] }
			via := leg.via
			if via == "Put" && code == wire.OpGet {
				via = "Get"
			}
			fmt.Fprintf(stdout, "sync %s via %s n %d p50 %v p90 %v p99 %v p99.9 %v p99.99 %v max %v\n", syncOpName(code), via, len(l),
				pct(0.50), pct(0.90), pct(0.99), pct(0.999), pct(0.9999), l[len(l)-1])
		}
	}
	for _, h := range cl.Health() {
		fmt.Fprintf(stdout, "lone calls to %s: mean %v asleep, %v polling (0: not tried)\n", h.Addr, h.LoneSlept, h.LonePolled)
	}
	if rc != nil {
		slept, polled := rc.lonePoll.Means()
		fmt.Fprintf(stdout, "lone calls to Redis %s: mean %v asleep, %v polling (0: not tried)\n", o.redisAddr, slept, polled)
	}
	return nil
}

// syncTurn is one leg's turn: ops from to to (not included).
type syncTurn struct{ leg, from, to int }

// syncTurns is the order in which legs legs send n ops, block at a time:
// every leg sends ops 0 to block, then every leg the next block, and so
// on, the leg that goes first moving on by one each block.
func syncTurns(n, block, legs int) []syncTurn {
	var turns []syncTurn
	for from := 0; from < n; from += block {
		for j := range legs {
			turns = append(turns, syncTurn{leg: (from/block + j) % legs, from: from, to: min(n, from+block)})
		}
	}
	return turns
}

// syncOpName is "put" or "get", as benchmark-latency.sh reads them.
func syncOpName(code wire.OpCode) string {
	if code == wire.OpPut {
		return "put"
	}
	return "get"
}

// doOne sends op as a batch of one and returns its result, an error if
// its status is not OK.
func doOne(ctx context.Context, cl batchClient, op wire.Op) (wire.Result, error) {
	res, err := cl.Do(ctx, []wire.Op{op})
	if err != nil {
		return wire.Result{}, err
	}
	if res[0].Status != wire.StatusOK {
		return wire.Result{}, fmt.Errorf("status %s", res[0].Status)
	}
	return res[0], nil
}

// libOne sends op through the client's Put or Get.
func libOne(ctx context.Context, cl *client.Client, op wire.Op) (wire.Result, error) {
	if op.Code == wire.OpPut {
		return wire.Result{Status: wire.StatusOK}, cl.Put(ctx, op.Key, op.Value)
	}
	v, err := cl.Get(ctx, op.Key)
	return wire.Result{Status: wire.StatusOK, Value: v}, err
}
