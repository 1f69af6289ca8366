package rpcdial

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"
)

// A failed connection is classified only after the fact, on a second
// connection of its own (these probes), so that a working connection
// costs nothing. The probes verify nothing: they only ask which protocol
// the port speaks.

// looksClosed reports whether err is what a client sees when the server
// drops its connection during a handshake: EOF, or a reset.
func looksClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
}

// probe dials addr for one question about the protocol it speaks, and
// returns ask's answer on the connection, within timeout; false when it
// cannot connect.
func probe(addr string, timeout time.Duration, ask func(net.Conn) bool) bool {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return false
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	return ask(conn)
}

// speaksTLS reports whether the server at addr answers a TLS handshake
// with TLS (a handshake that completes, or a TLS alert such as "bad
// certificate").
func speaksTLS(addr string, timeout time.Duration) bool {
	return probe(addr, timeout, func(conn net.Conn) bool {
		//nolint:gosec // a probe of the protocol: nothing is sent over it
		tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12})
		err := tc.Handshake()
		var alert tls.AlertError
		return err == nil || errors.As(err, &alert)
	})
}

// speaksPlaintext reports whether the server at addr answers net/rpc's
// plaintext HTTP handshake.
func speaksPlaintext(addr string, timeout time.Duration) bool {
	return probe(addr, timeout, func(conn net.Conn) bool {
		status, err := connect(conn)
		return err == nil && strings.HasPrefix(status, "200")
	})
}

// classifyTLSError returns err wrapped with ErrServerNotTLS when a TLS
// handshake with addr failed because the server speaks plaintext.
func classifyTLSError(err error, addr string, timeout time.Duration) error {
	var rec tls.RecordHeaderError
	if errors.As(err, &rec) || (looksClosed(err) && speaksPlaintext(addr, timeout)) {
		return fmt.Errorf("%s: %w (%w)", addr, ErrServerNotTLS, err)
	}
	return err
}

// classifyPlainError returns err wrapped with ErrServerWantsTLS when a
// plaintext handshake with addr failed because the server speaks TLS.
func classifyPlainError(err error, addr string, timeout time.Duration) error {
	if looksClosed(err) && speaksTLS(addr, timeout) {
		return fmt.Errorf("%s: %w (%w)", addr, ErrServerWantsTLS, err)
	}
	return err
}
