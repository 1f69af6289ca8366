// Package rpcdial opens the client's connections to a batchkv port: TCP,
// or TLS when given a configuration, and net/rpc's HTTP CONNECT handshake
// for the gob codec and the admin RPCs. When a connection fails because
// one side speaks TLS and the other does not, the error says so
// (ErrServerWantsTLS, ErrServerNotTLS): a failed connection is classified
// after the fact, on a probe connection of its own (probe.go), so that a
// working one costs nothing.
//
// Its error texts begin with "client:", as they reach users through
// package client, whose dialler this is.
package rpcdial

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/rpc"
	"time"

	"github.com/batchkv/batchkv/auth"
	"github.com/batchkv/batchkv/internal/rawsock"
)

// TLS mismatches, found when a connection fails: the error of the dial
// or of the handshake wraps one of these (errors.Is). Package client
// exports them under the same names.
var (
	// ErrServerWantsTLS says the server answered a plaintext connection
	// by closing it, and answers a TLS handshake.
	ErrServerWantsTLS = errors.New("the server speaks TLS only and this client dialled without TLS")
	// ErrServerNotTLS says the server answered a TLS handshake with
	// plaintext, or closed it, and answers the plaintext protocol.
	ErrServerNotTLS = errors.New("the server does not speak TLS and this client dialled with TLS")
)

// Dial opens a TCP connection to addr, and completes a TLS handshake on
// it when tlsCfg is set (its ServerName defaulting to addr's host), within
// timeout. A TLS handshake that fails because the server speaks plaintext
// wraps ErrServerNotTLS.
func Dial(ctx context.Context, addr string, timeout time.Duration, tlsCfg *tls.Config) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	conn := rawsock.Wrap(raw)
	if tlsCfg == nil {
		return conn, nil
	}
	tc := tls.Client(conn, auth.ForAddr(tlsCfg, addr))
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, classifyTLSError(fmt.Errorf("client: TLS to %s: %w", addr, err), addr, timeout)
	}
	return tc, nil
}

// HTTPClient speaks net/rpc's HTTP CONNECT handshake on conn, to the
// server at addr, within timeout, and returns a gob client over it. On
// error it closes conn; when conn is plaintext (tlsConn false) and the
// server turns out to speak TLS only, the error wraps ErrServerWantsTLS.
func HTTPClient(conn net.Conn, addr string, timeout time.Duration, tlsConn bool) (*rpc.Client, error) {
	_ = conn.SetDeadline(time.Now().Add(timeout))
	status, err := connect(conn)
	if err == nil && status != "200 Connected to Go RPC" {
		err = fmt.Errorf("net/rpc HTTP handshake answered %q", status)
	}
	if err != nil {
		_ = conn.Close()
		err = fmt.Errorf("client: %s: %w", addr, err)
		if !tlsConn {
			err = classifyPlainError(err, addr, timeout)
		}
		return nil, err
	}
	_ = conn.SetDeadline(time.Time{})
	return rpc.NewClient(conn), nil
}

// connect sends net/rpc's HTTP CONNECT request on conn and returns the
// status line of the answer ("200 Connected to Go RPC" from a net/rpc
// server).
func connect(conn net.Conn) (string, error) {
	if _, err := io.WriteString(conn, "CONNECT "+rpc.DefaultRPCPath+" HTTP/1.0\n\n"); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: "CONNECT"})
	if err != nil {
		return "", fmt.Errorf("net/rpc HTTP handshake: %w", err)
	}
	return resp.Status, nil
}
