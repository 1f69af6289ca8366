package load

import (
	"errors"
	"fmt"
	"time"
)

// BulkConfig sizes the throughput load.
type BulkConfig struct {
	Goroutines int     // concurrent batches in flight
	Batch      int     // ops per batch
	Keys       int     // keys each goroutine owns
	Reads      float64 // fraction of gets (YCSB-B: 0.95)
	ValueSize  int     // bytes per value
	// AttemptTimeout is the client's: how long one attempt may wait on a
	// server that does not answer before the next replica is tried.
	AttemptTimeout time.Duration
}

// CheckedConfig sizes the checked load: clients whose every op goes into
// the history that porcupine checks.
type CheckedConfig struct {
	Clients int // concurrent clients
	Keys    int // shared keys, so clients contend
	MaxOps  int // ops per batch, 1 to MaxOps
}

// Defaults of the loads of a chaos run.
const (
	DefaultGoroutines     = 128
	DefaultBatch          = 8192 // ops per batch, and keys per goroutine
	DefaultReads          = 0.95
	DefaultValueSize      = 32
	DefaultAttemptTimeout = 5 * time.Second
	DefaultCheckedClients = 16
	DefaultCheckedKeys    = 200
	DefaultCheckedMaxOps  = 8
)

// DefaultBulk returns the bulk load of a full chaos run: 128 goroutines of
// 8192-op batches, 95% gets.
func DefaultBulk() BulkConfig {
	return BulkConfig{Goroutines: DefaultGoroutines, Batch: DefaultBatch, Keys: DefaultBatch, Reads: DefaultReads,
		ValueSize: DefaultValueSize, AttemptTimeout: DefaultAttemptTimeout}
}

// DefaultChecked returns the checked load of a full chaos run.
func DefaultChecked() CheckedConfig {
	return CheckedConfig{Clients: DefaultCheckedClients, Keys: DefaultCheckedKeys, MaxOps: DefaultCheckedMaxOps}
}

// Errors of the loads' configurations.
var (
	// ErrBadBulk is a bulk load that cannot run: no goroutine, no op per
	// batch or key, a share of reads outside [0, 1], a negative value
	// size, or no attempt timeout.
	ErrBadBulk = errors.New("chaos: bad bulk load")
	// ErrBadChecked is a checked load without a client, a key or an op.
	ErrBadChecked = errors.New("chaos: bad checked load")
)

// Validate says what is wrong with c, wrapping ErrBadBulk, or nil.
func (c BulkConfig) Validate() error {
	switch {
	case c.Goroutines < 1, c.Batch < 1, c.Keys < 1:
		return fmt.Errorf("%w: goroutines %d, batch %d, keys %d: want at least 1 each", ErrBadBulk, c.Goroutines, c.Batch, c.Keys)
	case c.Reads < 0 || c.Reads > 1:
		return fmt.Errorf("%w: reads %v: want a share in [0, 1]", ErrBadBulk, c.Reads)
	case c.ValueSize < 0:
		return fmt.Errorf("%w: value size %d", ErrBadBulk, c.ValueSize)
	case c.AttemptTimeout <= 0:
		return fmt.Errorf("%w: attempt timeout %v: want more than 0", ErrBadBulk, c.AttemptTimeout)
	}
	return nil
}

// Validate says what is wrong with c, wrapping ErrBadChecked, or nil.
func (c CheckedConfig) Validate() error {
	if c.Clients < 1 || c.Keys < 1 || c.MaxOps < 1 {
		return fmt.Errorf("%w: clients %d, keys %d, max ops %d: want at least 1 each", ErrBadChecked, c.Clients, c.Keys, c.MaxOps)
	}
	return nil
}
