package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/bugswitch"
	"github.com/batchkv/batchkv/internal/clustertest"
	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/wire"
)

// TestVerifyNamesTheReplicaThatDiffers: verify passes on a healthy RF=3
// cluster; after bytes are flipped in a stopped follower's log and it
// replays them unchecked (the planted bug the replicas' own checks
// catch), verify names that replica and fails.
func TestVerifyNamesTheReplicaThatDiffers(t *testing.T) {
	// Without TLS a server grants one content digest a second, to anyone:
	// on a busy machine (go test ./... on 2 cores) one server refused
	// verify's digest in every round, and verify never compared it.
	c := clustertest.New(t, 3, 3, 1, clustertest.WithConfig(func(_ int, cfg *kvs.Config) {
		cfg.Limits.DigestEvery = time.Millisecond
	}))
	addrs := c.Addrs()
	cl, err := client.New(client.Config{Servers: addrs, Shards: 1, RF: 3})
	require.NoError(t, err)
	defer cl.Close()
	value := strings.Repeat("<the value>", 500)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, k := range []string{"a", "b", "c"} {
		_, err := cl.Do(ctx, []wire.Op{{Code: wire.OpPut, Key: k, Value: value + k}})
		require.NoError(t, err)
	}
	hosts := strings.Join(addrs, ",")
	var out bytes.Buffer
	require.NoError(t, run([]string{"-hosts", hosts, "verify", "-within", "20s"}, &out, io.Discard), out.String())
	require.Contains(t, out.String(), "all 1 shards: every replica has the same content")

	// Server 0 leads (the preferred replica), so 1 is a follower.
	c.Stop(1)
	segs, err := filepath.Glob(filepath.Join(c.Dirs()[1], "shard-0", "wal", "*.wal"))
	require.NoError(t, err)
	slices.Sort(segs)
	raw, err := os.ReadFile(segs[len(segs)-1])
	require.NoError(t, err)
	at := bytes.Index(raw, []byte(value+"a"))
	require.GreaterOrEqual(t, at, 0)
	for k := at + 1000; k < at+1064; k++ {
		raw[k] ^= 0xff
	}
	require.NoError(t, os.WriteFile(segs[len(segs)-1], raw, 0o600))
	bugswitch.UncheckedData.Store(true)
	defer bugswitch.UncheckedData.Store(false)
	bugswitch.NoStartupCheck.Store(true) // it would rebuild the replica
	defer bugswitch.NoStartupCheck.Store(false)
	c.Start(1)
	out.Reset()
	err = run([]string{"-hosts", hosts, "verify", "-within", "20s"}, &out, io.Discard)
	require.Error(t, err, out.String())
	require.Contains(t, out.String(), addrs[1]+" ")
	require.Regexp(t, addrs[1]+` [0-9a-f]{16}/3 keys DIFFERS`, out.String())
	require.NotContains(t, out.String(), addrs[0]+" DIFFERS")
}
