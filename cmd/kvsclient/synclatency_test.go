package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/kvs/store"
)

// TestSyncLatencyInterleavesLegs: -sync-ops with -sync-redis times every
// op via Do, via Put or Get and as a RESP command (here to the same
// server's RESP), n of each, and the RESP leg's keys are loaded first.
func TestSyncLatencyInterleavesLegs(t *testing.T) {
	st, _ := store.New(store.DefaultKind)
	addr := serve(t, st)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, run(ctx, []string{"-hosts", addr, "-sync-ops", "300", "-sync-redis", addr, "-valueBytes", "64"}, &out))
	for op, lib := range map[string]string{"put": "Put", "get": "Get"} {
		for _, via := range []string{"Do", lib, "redis"} {
			require.Regexp(t, regexp.MustCompile(`(?m)^sync `+op+` via `+via+` n 300 p50 \S+ p90 \S+ p99 \S+ p99.9 \S+ p99.99 \S+ max \S+$`), out.String())
		}
	}
	require.Equal(t, 300, st.Len())
	require.Equal(t, 6, bytes.Count(out.Bytes(), []byte("\nsync ")), out.String())
}

// TestSyncTurns: op by op, the legs take each op in turn, the first leg
// moving on by one each op; with a block, each leg sends the block's ops
// in a row, and every leg sends every op once.
func TestSyncTurns(t *testing.T) {
	require.Equal(t, []syncTurn{
		{0, 0, 1}, {1, 0, 1}, {2, 0, 1},
		{1, 1, 2}, {2, 1, 2}, {0, 1, 2},
	}, syncTurns(2, 1, 3))
	require.Equal(t, []syncTurn{
		{0, 0, 3}, {1, 0, 3},
		{1, 3, 6}, {0, 3, 6},
		{0, 6, 7}, {1, 6, 7},
	}, syncTurns(7, 3, 2))
	for _, c := range []struct{ n, block, legs int }{{300, 7, 3}, {20000, 200, 2}, {5, 5, 1}} {
		seen := make([][]int, c.legs)
		for _, turn := range syncTurns(c.n, c.block, c.legs) {
			require.LessOrEqual(t, turn.to-turn.from, c.block)
			for i := turn.from; i < turn.to; i++ {
				seen[turn.leg] = append(seen[turn.leg], i)
			}
		}
		for leg, ops := range seen {
			require.Len(t, ops, c.n, "leg %d", leg)
			for i, op := range ops {
				require.Equal(t, i, op, "leg %d sends its ops in order, each once", leg)
			}
		}
	}
}

// TestSyncLatencyInBlocks: -sync-block times as many ops of each leg as
// op by op, and is refused outside 1 to -sync-ops.
func TestSyncLatencyInBlocks(t *testing.T) {
	st, _ := store.New(store.DefaultKind)
	addr := serve(t, st)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, []string{"-hosts", addr, "-sync-ops", "300", "-sync-block", "7", "-sync-redis", addr, "-valueBytes", "64"}, &out))
	require.Equal(t, 6, bytes.Count(out.Bytes(), []byte("\nsync ")), out.String())
	require.Equal(t, 6, bytes.Count(out.Bytes(), []byte(" n 300 p50 ")), out.String())
	for _, bad := range []string{"0", "301"} {
		err := run(ctx, []string{"-hosts", addr, "-sync-ops", "300", "-sync-block", bad}, &out)
		require.ErrorContains(t, err, "-sync-block "+bad)
	}
}
