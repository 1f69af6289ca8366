package clustertest

import (
	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/kvs/replica"
)

// An Option configures a Cluster before its servers first start.
type Option func(*Cluster)

// WithInitial starts only the first n servers as the cluster's members;
// the others are spares that start (with Config.Join) when the test calls
// Start, ready to be added. 0, the default, makes every server a member.
func WithInitial(n int) Option { return func(c *Cluster) { c.initial = n } }

// WithInMemory starts every server with Config.InMemory and no data dir.
func WithInMemory() Option { return func(c *Cluster) { c.inMemory = true } }

// WithTiming gives every server's Raft groups these timeouts
// (Config.Raft).
func WithTiming(t replica.Timing) Option { return func(c *Cluster) { c.timing = t } }

// WithReadMode sets every server's Config.ReadMode.
func WithReadMode(mode string) Option { return func(c *Cluster) { c.readMode = mode } }

// WithTLS makes every connection of the cluster mutual TLS: the servers
// share one node certificate for 127.0.0.1, clients have a client
// certificate of the same CA, and MembershipAdmin has the one that may
// change membership.
func WithTLS() Option { return func(c *Cluster) { c.tls = true } }

// WithPrepareDir calls prepare with server i's data dir before the server
// first starts (e.g. to mount a small file system on it).
func WithPrepareDir(prepare func(i int, dir string)) Option {
	return func(c *Cluster) { c.prepareDirs = append(c.prepareDirs, prepare) }
}

// WithConfig calls edit with server i's configuration each time the
// server starts, after the cluster has filled it in and before kvs.New.
func WithConfig(edit func(i int, cfg *kvs.Config)) Option {
	return func(c *Cluster) { c.configHooks = append(c.configHooks, edit) }
}

// WithServerHook calls hook with server i each time it starts, after
// kvs.New and before it serves: the place for a package's test-only
// switches (e.g. kvs.SetStaleReadsForTest in kvs's own tests).
func WithServerHook(hook func(i int, s *kvs.Server)) Option {
	return func(c *Cluster) { c.serverHooks = append(c.serverHooks, hook) }
}
