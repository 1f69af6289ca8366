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
