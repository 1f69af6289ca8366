// Package transport carries each shard's Raft traffic over the server's
// own port, and routes hashicorp/raft's log lines into the server's slog
// logger.
//
// A connection for shard n opens with Preamble and n (ReadShard reads
// n); the server's accept loop reads both and hands the connection to
// shard n's Stream, the raft.StreamLayer that also dials the peers:
//
//	s := transport.NewStream(n, self, transport.DialTCP)
//	t := transport.NewNetwork(s, transport.NewRaftLogger(log))
//	// the accept loop: s.Offer(conn)
//
// Every connection a Stream accepts or dials is guarded: each Raft message
// read from it is checked against Limits (lengths, element counts,
// nesting, the shapes hashicorp/raft sends) before Raft decodes it, since
// its decoder allocates what a length claims before the bytes arrive.
//
// A Stream notes when each peer it dialled last answered (HeardFrom),
// which the silence watcher of package leadership reads. The logger
// passes Raft's warnings and errors to slog, and logs at debug level the
// transport's errors about connections this process closed itself.
package transport
