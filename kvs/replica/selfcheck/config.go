package selfcheck

import "log/slog"

// Config is what the check needs of the server. Every field is required.
type Config struct {
	// Self is this server's address, skipped among a replica's peers.
	Self string
	// PeerStatus asks a peer for its status within a timeout (with
	// content digests when the request asks for them).
	PeerStatus PeerStatusFunc
	// Logger receives the check's outcome when it compared the replica.
	Logger *slog.Logger
}

// Replica is the replica a check compares with its peers.
type Replica struct {
	// Shard is the replica's shard, as the peers' status names it.
	Shard int
	// Dir is the replica's data dir, named in the damage reported.
	Dir string
	// Placement returns the shard's replicas (this server among them).
	Placement func() []string
	// Applied returns the index of the last entry Raft handed to the
	// replica's state machine, as a peer's status reports it.
	Applied func() uint64
	// Content returns the digest of the replica's store, its number of
	// keys and the last command entry it held when they were taken, as
	// a peer's status reports them; ok is false when applies changed the
	// store meanwhile.
	Content func() (index, digest uint64, keys int, ok bool)
	// Stop closes when the replica closes; the check then ends.
	Stop <-chan struct{}
}
