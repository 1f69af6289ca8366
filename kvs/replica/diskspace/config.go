package diskspace

import (
	"errors"
	"log/slog"
	"time"

	"github.com/batchkv/batchkv/wire"
)

// How often a Watch reads: Every is how often it reads its data dir's
// free space, PeerEvery how often it asks its peers about theirs (and how
// long it waits for one's answer).
const (
	Every     = 100 * time.Millisecond
	PeerEvery = 250 * time.Millisecond
)

// PeerStatusFunc asks the server at addr for its status within timeout
// (the server wires it to the client's Status RPC).
type PeerStatusFunc func(addr string, req wire.StatusRequest, timeout time.Duration) (wire.StatusReply, error)

// Config configures a Watch.
type Config struct {
	// Dir is the data dir whose file system is watched. Required.
	Dir string
	// Reserve is the free space, in bytes, under which the server is
	// full; it is full no more once twice Reserve is free. Required.
	Reserve uint64
	// Logger receives the changes of the full state. Nil means
	// slog.Default().
	Logger *slog.Logger
	// PeerStatus asks a peer for its disk; nil: peers are never known
	// full.
	PeerStatus PeerStatusFunc
	// Peers lists the servers to ask; nil asks none.
	Peers func() []string
}

// Errors of Start's configuration.
var (
	// ErrNoDir says Config.Dir is empty: a server without a data dir has
	// no disk to watch (its *Watch is nil).
	ErrNoDir = errors.New("diskspace: no data dir to watch")
	// ErrNoReserve says Config.Reserve is 0.
	ErrNoReserve = errors.New("diskspace: a reserve of 0 bytes")
)

// validate fills the defaults of cfg and rejects what cannot work.
func (cfg *Config) validate() error {
	if cfg.Dir == "" {
		return ErrNoDir
	}
	if cfg.Reserve == 0 {
		return ErrNoReserve
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Peers == nil {
		cfg.Peers = func() []string { return nil }
	}
	return nil
}
