package fsm

import (
	"time"

	"github.com/batchkv/batchkv/kvs/store"
)

// DefaultSessionTTL is how long a shard remembers a client session after
// its last batch. A batch retried later than this after its first attempt
// may apply twice.
const DefaultSessionTTL = 10 * time.Minute

// Config configures a shard's state machine.
type Config struct {
	// NewStore makes an empty store, for the shard and for each snapshot
	// restore. Nil means store.NewArena.
	NewStore func() store.Store
	// SessionTTL is how long a client session is remembered after its
	// last batch, in the leader's append times; zero means
	// DefaultSessionTTL.
	SessionTTL time.Duration
	// SnapshotShare is the share of the wall time a snapshot being
	// written may spend writing (pace.go); zero means
	// DefaultSnapshotShare, and 1 or more writes it as fast as it can.
	SnapshotShare float64
}

// validate fills cfg's defaults; every value is usable.
func (cfg *Config) validate() {
	if cfg.NewStore == nil {
		cfg.NewStore = func() store.Store { return store.NewArena() }
	}
	if cfg.SessionTTL == 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.SnapshotShare <= 0 {
		cfg.SnapshotShare = DefaultSnapshotShare
	}
}
