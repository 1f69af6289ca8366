package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/bugswitch"
	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/wire"
)

// TestVerifyNamesTheReplicaThatDiffers: verify passes on a healthy RF=3
// cluster; after bytes are flipped in a stopped follower's log and it
// replays them unchecked (the planted bug the replicas' own checks
// catch), verify names that replica and fails.
func TestVerifyNamesTheReplicaThatDiffers(t *testing.T) {
	var addrs, dirs []string
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addrs = append(addrs, ln.Addr().String())
		dirs = append(dirs, t.TempDir())
		require.NoError(t, ln.Close())
	}
	servers := make([]*kvs.Server, 3)
	start := func(i int) {
		srv, err := kvs.New(kvs.Config{Self: addrs[i], Peers: addrs, Replicas: 3, Shards: 1, DataDir: dirs[i],
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		require.NoError(t, err)
		var ln net.Listener
		require.Eventually(t, func() bool { ln, err = net.Listen("tcp", addrs[i]); return err == nil }, 5*time.Second, 20*time.Millisecond)
		go func() { _ = srv.Serve(ln) }()
		servers[i] = srv
	}
	for i := range 3 {
		start(i)
	}
	t.Cleanup(func() {
		for _, s := range servers {
			_ = s.Close()
		}
	})
	cl, err := client.New(client.Config{Servers: addrs, Shards: 1, Replicas: 3})
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
	require.NoError(t, servers[1].Close())
	segs, err := filepath.Glob(filepath.Join(dirs[1], "shard-0", "wal", "*.wal"))
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
	start(1)
	out.Reset()
	err = run([]string{"-hosts", hosts, "verify", "-within", "20s"}, &out, io.Discard)
	require.Error(t, err, out.String())
	require.Contains(t, out.String(), addrs[1]+" ")
	require.Regexp(t, addrs[1]+` [0-9a-f]{16}/3 keys DIFFERS`, out.String())
	require.NotContains(t, out.String(), addrs[0]+" DIFFERS")
}
