package client

import (
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/batchkv/batchkv/wire"
)

// The defaults of Config's zero fields.
const (
	// DefaultConnsPerServer is Config.ConnsPerServer's default.
	DefaultConnsPerServer = 2
	// DefaultCodec is Config.Codec's default: the binary codec.
	DefaultCodec = "binary"
	// DefaultDialTimeout is Config.DialTimeout's default.
	DefaultDialTimeout = 2 * time.Second
	// DefaultMaxBatchOps is Config.MaxBatchOps's default.
	DefaultMaxBatchOps = 1024
	// DefaultLinger is Config.Linger's default.
	DefaultLinger = 100 * time.Microsecond
	// DefaultMaxInFlight is Config.MaxInFlight's default.
	DefaultMaxInFlight = 8
	// DefaultBatchTimeout is Config.BatchTimeout's default.
	DefaultBatchTimeout = 10 * time.Second
	// DefaultFailureThreshold is Config.FailureThreshold's default.
	DefaultFailureThreshold = 3
	// DefaultCooldown is Config.Cooldown's default.
	DefaultCooldown = 500 * time.Millisecond
	// DefaultMaxCooldown is Config.MaxCooldown's default.
	DefaultMaxCooldown = 5 * time.Second
	// DefaultAttemptTimeout is Config.AttemptTimeout's default.
	DefaultAttemptTimeout = 5 * time.Second
	// DefaultLonePoll is Config.LonePoll's default.
	DefaultLonePoll = 100 * time.Microsecond
	// MaxLonePoll is the most Config.LonePoll may be: a reply that takes
	// longer is not worth a CPU's polling.
	MaxLonePoll = time.Millisecond
)

// Config configures a Client. Zero fields take the defaults above.
type Config struct {
	// Servers are the servers' host:port addresses. Required. To route
	// directly, list the same servers as the servers' -peers flag.
	Servers []string
	// VirtualNodes per server on the ring; must match the servers'. Zero
	// means ring.DefaultVirtualNodes.
	VirtualNodes int
	// ConnsPerServer is the number of TCP connections to each server.
	// Default DefaultConnsPerServer (2).
	ConnsPerServer int
	// Codec is "binary" (DefaultCodec) or "gob" (net/rpc's own encoding
	// over its HTTP transport; slower, kept for comparison).
	Codec string
	// DialTimeout bounds connecting to a server. Default
	// DefaultDialTimeout (2s).
	DialTimeout time.Duration
	// MaxBatchOps is the size at which the auto-batcher of Get, Put,
	// Delete and DoShared sends a server's pending batch. Default
	// DefaultMaxBatchOps (1024); at most wire.MaxBatchOps.
	MaxBatchOps int
	// Linger bounds how long an op of Get, Put, Delete or DoShared
	// waits behind batches in flight before its batch is sent, full or
	// not. An op that finds no batch in flight to its server is sent at
	// once. Default DefaultLinger (100µs).
	Linger time.Duration
	// MaxInFlight bounds the auto-batcher's batches in flight per server
	// (per shard when replicated); when reached, further batches wait
	// (flow control). Default DefaultMaxInFlight (8).
	MaxInFlight int
	// BatchTimeout bounds one auto-batched RPC, whose ops may come from
	// callers with different contexts, as AttemptTimeout bounds an attempt
	// (to within a sixteenth). Default DefaultBatchTimeout (10s).
	BatchTimeout time.Duration
	// FailureThreshold is the number of consecutive failed calls (cannot
	// connect, connection broken, no reply before the caller's deadline)
	// after which a server is marked unhealthy: it gets no calls, and its
	// ops fail at once with ErrUnavailable, until a probe succeeds.
	// Default DefaultFailureThreshold (3).
	FailureThreshold int
	// Cooldown is how long an unhealthy server waits for its first probe;
	// each failed probe doubles it, up to MaxCooldown. Defaults
	// DefaultCooldown (500ms) and DefaultMaxCooldown (5s); a MaxCooldown
	// below Cooldown is raised to it.
	Cooldown    time.Duration
	MaxCooldown time.Duration
	// LonePoll is the longest a lone call polls its socket for its reply
	// before it sleeps until the reply comes. A lone call is a batch of
	// at most LoneOps ops with no other call in flight to its server
	// (a lone Get or Put too). Polling spends the caller's CPU to spare
	// it the wake-up of a sleeping thread, which on a small VM costs
	// more than the server's work; the client times its lone calls both
	// ways and polls only while that makes them quicker by a tenth
	// (package internal/busypoll); its lone calls are timed even when it
	// never polls, for Health. Binary codec without TLS, on Linux only.
	// Default DefaultLonePoll (100µs), at most MaxLonePoll; negative:
	// never poll.
	LonePoll time.Duration

	// Shards, when positive, says the cluster is replicated: keys map to
	// this many shards, each replicated on RF servers (package
	// shard; zero RF means 1). Both must match the servers' flags;
	// Discover reads them from a server. Zero Shards means the memory-only
	// cluster, where keys map to servers directly.
	Shards int
	RF     int
	// Map, when set (Discover sets it), is a replicated cluster's shard
	// map to route with from the start. Nil means the initial placement
	// of Servers, which the client replaces with the servers' map on the
	// first redirect.
	Map *wire.ClusterMap
	// AttemptTimeout bounds one attempt of a replicated batch, so that a
	// leader that went silent (partitioned, paused) is given up and the
	// next replica tried. Default DefaultAttemptTimeout (5s). An attempt
	// ends between 15/16 of it and all of it: attempts share timers.
	AttemptTimeout time.Duration

	// TLS, when set, makes every connection TLS with this configuration
	// (auth.Identity.ClientConfig gives one for a cluster's certificates);
	// its ServerName defaults to the host of each server's address. Nil
	// means plaintext.
	TLS *tls.Config
}

// validate fills in the defaults of c's zero fields and checks the rest.
func (c *Config) validate() error {
	if len(c.Servers) == 0 {
		return errors.New("client: Config.Servers is empty")
	}
	orDefault(&c.ConnsPerServer, DefaultConnsPerServer)
	orDefault(&c.DialTimeout, DefaultDialTimeout)
	orDefault(&c.MaxBatchOps, DefaultMaxBatchOps)
	orDefault(&c.Linger, DefaultLinger)
	orDefault(&c.MaxInFlight, DefaultMaxInFlight)
	orDefault(&c.BatchTimeout, DefaultBatchTimeout)
	orDefault(&c.FailureThreshold, DefaultFailureThreshold)
	orDefault(&c.Cooldown, DefaultCooldown)
	orDefault(&c.MaxCooldown, DefaultMaxCooldown)
	c.MaxCooldown = max(c.MaxCooldown, c.Cooldown)
	if c.Shards > 0 {
		orDefault(&c.RF, 1)
	}
	orDefault(&c.AttemptTimeout, DefaultAttemptTimeout)
	orDefault(&c.LonePoll, DefaultLonePoll)
	switch {
	case c.ConnsPerServer < 0, c.MaxInFlight < 0, c.DialTimeout < 0, c.Linger < 0, c.BatchTimeout < 0,
		c.FailureThreshold < 0, c.Cooldown < 0, c.Shards < 0, c.RF < 0, c.AttemptTimeout < 0:
		return errors.New("client: negative Config field")
	case c.MaxBatchOps < 0 || c.MaxBatchOps > wire.MaxBatchOps:
		return fmt.Errorf("client: MaxBatchOps %d outside [1, %d]", c.MaxBatchOps, wire.MaxBatchOps)
	case c.LonePoll > MaxLonePoll:
		return fmt.Errorf("client: LonePoll %v over %v", c.LonePoll, MaxLonePoll)
	case c.Codec != "" && c.Codec != DefaultCodec && c.Codec != "gob":
		return fmt.Errorf("client: unknown codec %q (want binary or gob)", c.Codec)
	}
	return nil
}

// orDefault sets *v to def when it is zero.
func orDefault[T int | time.Duration](v *T, def T) {
	if *v == 0 {
		*v = def
	}
}
