package client

import (
	"errors"
	"fmt"

	"github.com/batchkv/batchkv/internal/rpcdial"
	"github.com/batchkv/batchkv/wire"
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
	// ErrNoMemory is returned for a write that the server refused because
	// its stores are at their share of its -max-memory; it was not
	// applied. Reads and deletes are still served.
	ErrNoMemory = errors.New("client: server out of memory")
	// ErrNoSpace is returned for a write that was refused because the
	// disks of a majority of its shard's replicas are full; it was not
	// applied. Reads are still served.
	ErrNoSpace = errors.New("client: no space on the shard's disks")
)

// opError is the error of an op answered with st, which is neither
// applied nor a conditional write's mismatch.
func opError(op wire.Op, st wire.Status) error {
	var kind error
	switch st {
	case wire.StatusNoMemory:
		kind = ErrNoMemory
	case wire.StatusNoSpace:
		kind = ErrNoSpace
	default:
		return fmt.Errorf("client: %s %q: %s", op.Code, op.Key, st)
	}
	return fmt.Errorf("%w: %s %q: %s", kind, op.Code, op.Key, st)
}

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
