package client

import (
	"errors"

	"github.com/batchkv/batchkv/internal/rpcdial"
)

// Errors returned by the client. Test for them with errors.Is.
var (
	// ErrNotFound is returned by Get for a key that is not present.
	ErrNotFound = errors.New("client: key not found")
	// ErrUnavailable means a server could not be reached or its connection
	// broke. A write that failed with it may or may not have been applied.
	ErrUnavailable = errors.New("client: server unavailable")
	// ErrClosed is returned by calls made after Close.
	ErrClosed = errors.New("client: closed")
	// ErrTooLarge is returned for a key, value or batch over the limits in
	// package wire; nothing was sent.
	ErrTooLarge = errors.New("client: over the size limits")
	// ErrInvalid is returned for an empty key or an unknown op; nothing was
	// sent.
	ErrInvalid = errors.New("client: invalid op")
)

// TLS mismatches, found when a connection fails: the error of the dial
// or of the first call wraps one of these (errors.Is). They are
// internal/rpcdial's, which opens the client's connections.
var (
	// ErrServerWantsTLS says the server answered a plaintext connection
	// by closing it, and answers a TLS handshake: set Config.TLS
	// (Admin.TLS).
	ErrServerWantsTLS = rpcdial.ErrServerWantsTLS
	// ErrServerNotTLS says the server answered a TLS handshake with
	// plaintext, or closed it, and answers the plaintext protocol: leave
	// Config.TLS nil, or give the server its certificates.
	ErrServerNotTLS = rpcdial.ErrServerNotTLS
)
