package procs

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/wire"
)

// serverBin is the kvsserver binary TestMain builds for the tests.
var serverBin string

func TestMain(m *testing.M) { os.Exit(RunWithServerBinary(m, &serverBin)) }

// TestClusterOverTLS: harness servers with TLS serve a client with the
// loads' certificate and the admin RPCs with the node's, over their fault
// proxies, and refuse a plaintext caller.
func TestClusterOverTLS(t *testing.T) {
	c, err := Start(Config{Bin: serverBin, Dir: t.TempDir(), Servers: 3, Shards: 1, TLS: true})
	require.NoError(t, err)
	defer c.Close()
	cl, err := client.New(client.Config{Servers: c.Addrs, Shards: 1, RF: 3, TLS: c.ClientTLS})
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, cl.Put(ctx, "k", "v"))
	v, err := cl.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "v", v)
	for _, a := range c.Addrs {
		st, err := c.Admin.Status(a, wire.StatusRequest{Digest: true}, 5*time.Second)
		require.NoError(t, err, "a node certificate gets digests")
		require.Len(t, st.Shards, 1)
	}
	_, err = client.Status(c.Addrs[0], wire.StatusRequest{}, 2*time.Second)
	require.Error(t, err, "a plaintext caller is refused")
}

// TestConfigRefusesBadClusters: a cluster without a binary, a directory or
// a server, or with an RF above its servers, is refused before anything
// starts.
func TestConfigRefusesBadClusters(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		cfg  Config
		want error
	}{
		{Config{Dir: dir, Servers: 3}, ErrNoBinary},
		{Config{Bin: serverBin, Servers: 3}, ErrNoDir},
		{Config{Bin: serverBin, Dir: dir}, ErrBadSize},
		{Config{Bin: serverBin, Dir: dir, Servers: 3, RF: 4}, ErrBadSize},
		{Config{Bin: serverBin, Dir: dir, Servers: 3, Spares: -1}, ErrBadSize},
	} {
		_, err := Start(c.cfg)
		require.ErrorIs(t, err, c.want, "%+v", c.cfg)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "a refused cluster wrote nothing")
}
