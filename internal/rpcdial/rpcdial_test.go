package rpcdial

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/rpc"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/auth"
)

// serveRPC serves net/rpc's HTTP protocol on a loopback port, over TLS
// with cfg when it is set, and returns the address. A TLS port closes a
// connection whose handshake fails, as a batchkv server does.
func serveRPC(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	if cfg != nil {
		ln = tls.NewListener(ln, cfg)
	}
	srv := &http.Server{Handler: rpc.NewServer(), ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return addr
}

// open dials addr and speaks the HTTP handshake, as the client does.
func open(addr string, cfg *tls.Config) (*rpc.Client, error) {
	conn, err := Dial(context.Background(), addr, 2*time.Second, cfg)
	if err != nil {
		return nil, err
	}
	return HTTPClient(conn, addr, 2*time.Second, cfg != nil)
}

// TestMismatchesAreNamed: a plaintext dial of a TLS port and a TLS dial
// of a plaintext port fail with the error that names the mismatch; the
// matching pairs connect; a port where nothing listens is neither.
func TestMismatchesAreNamed(t *testing.T) {
	ids, err := auth.MakeLocal(t.TempDir(), []string{"127.0.0.1"})
	require.NoError(t, err)
	tlsAddr, plainAddr := serveRPC(t, ids.Node.ServerConfig()), serveRPC(t, nil)
	clientTLS := ids.Client.ClientConfig()

	_, err = open(tlsAddr, nil)
	require.ErrorIs(t, err, ErrServerWantsTLS)
	require.Contains(t, err.Error(), tlsAddr)
	_, err = open(plainAddr, clientTLS)
	require.ErrorIs(t, err, ErrServerNotTLS)

	for _, c := range []struct {
		addr string
		cfg  *tls.Config
	}{{plainAddr, nil}, {tlsAddr, clientTLS}} {
		cl, err := open(c.addr, c.cfg)
		require.NoError(t, err, c.addr)
		require.NoError(t, cl.Close())
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	require.NoError(t, ln.Close())
	for _, cfg := range []*tls.Config{nil, clientTLS} {
		_, err = open(dead, cfg)
		require.Error(t, err)
		require.False(t, errors.Is(err, ErrServerWantsTLS) || errors.Is(err, ErrServerNotTLS), "%v", err)
	}
}
