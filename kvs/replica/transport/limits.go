package transport

import (
	"errors"

	"github.com/batchkv/batchkv/wire"
)

// MaxAppendEntries is how many entries a leader puts in one AppendEntries
// RPC (and one disk write: the group commit of concurrent batches). A
// peer's message may hold no more elements in one array or map.
const MaxAppendEntries = 256

// Limits bound one Raft message read from a peer, member or not: an RPC
// request (its type byte and msgpack value) on a connection the server
// accepted, or one msgpack value of the answers on a connection it
// dialled. A message past a limit is refused before hashicorp/raft reads
// its first byte past the limit, and the connection is closed.
//
// hashicorp/raft decodes with go-msgpack, which trusts the lengths it
// reads: a time claiming 4 GiB is allocated before a byte of it arrives,
// and so are the first 256 KiB of any string, array or map. The limits
// make every such claim small or backed by bytes that arrive.
type Limits struct {
	// MaxItems caps the elements of one array and the pairs of one map.
	MaxItems int64
	// MaxBytes caps one string, binary or extension value.
	MaxBytes int64
	// MaxDepth caps how deeply arrays and maps nest.
	MaxDepth int
	// MaxMessage caps the bytes of one message, not counting the data of
	// a snapshot that follows an InstallSnapshot request.
	MaxMessage int64
}

// maxTimeBytes caps a time's encoding: hashicorp/raft's is 15 or 16 bytes
// (time.Time's binary form), msgpack's timestamps 4, 8 or 12.
const maxTimeBytes = 32

// DefaultLimits are what every shard's transport enforces. An entry's data
// is one shard's part of a request, so at most a frame
// (wire.MaxFrameBytes); the structs of hashicorp/raft's RPCs have a dozen
// fields and nest three deep (request, Entries, entry).
var DefaultLimits = Limits{
	MaxItems:   MaxAppendEntries,
	MaxBytes:   2 * wire.MaxFrameBytes,
	MaxDepth:   8,
	MaxMessage: MaxAppendEntries*(2*wire.MaxFrameBytes+1<<10) + 1<<20,
}

// ErrRefused is wrapped by the error that a guarded connection's Read
// returns for a message past its Limits, or not shaped as hashicorp/raft
// sends it.
var ErrRefused = errors.New("raft message refused")
