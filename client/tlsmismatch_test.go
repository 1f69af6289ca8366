package client_test

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/auth"
	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/kvs"
)

// TestTLSMismatchIsNamed: a plaintext client of a TLS server, and a TLS
// client of a plaintext server, get an error that says so (errors.Is),
// not only the handshake's EOF; a matching pair discovers the cluster.
func TestTLSMismatchIsNamed(t *testing.T) {
	ids, err := auth.MakeLocal(t.TempDir(), []string{"127.0.0.1"})
	require.NoError(t, err)
	start := func(id *auth.Identity) string {
		ln := listen(t, "127.0.0.1:0")
		srv, err := kvs.New(kvs.Config{Identity: id, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		require.NoError(t, err)
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
		return ln.Addr().String()
	}
	tlsAddr, plainAddr := start(ids.Node), start(nil)
	tlsAdmin := client.Admin{TLS: ids.Client.ClientConfig()}

	_, err = client.Discover(tlsAddr, 2*time.Second)
	require.ErrorIs(t, err, client.ErrServerWantsTLS)
	require.Contains(t, err.Error(), tlsAddr)

	_, err = tlsAdmin.Discover(plainAddr, 2*time.Second)
	require.ErrorIs(t, err, client.ErrServerNotTLS)

	_, err = client.Discover(plainAddr, 2*time.Second)
	require.NoError(t, err)
	_, err = tlsAdmin.Discover(tlsAddr, 2*time.Second)
	require.NoError(t, err)

	// A port where nothing listens is neither.
	ln := listen(t, "127.0.0.1:0")
	dead := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, err = client.Discover(dead, time.Second)
	require.Error(t, err)
	require.False(t, errors.Is(err, client.ErrServerWantsTLS) || errors.Is(err, client.ErrServerNotTLS), "%v", err)
}
