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
	// MaxBytes caps an entry's data: a string or binary value of a key
	// Data.
	MaxBytes int64
	// MaxField caps every other string, binary or extension value.
	MaxField int64
	// MaxDepth caps how deeply arrays and maps nest.
	MaxDepth int
	// MaxMessage caps the bytes of one message, not counting the data of
	// a snapshot that follows an InstallSnapshot request.
	MaxMessage int64
}

// maxTimeBytes caps a time's encoding: hashicorp/raft's is 15 or 16 bytes
// (time.Time's binary form), msgpack's timestamps 4, 8 or 12.
const maxTimeBytes = 32

// maxKeyBytes caps a map key. go-msgpack finds a struct's field by
// searching its packed table of names for the key, so a key that copies
// part of the table (names, separators and index bytes) would decode into
// another field than its text names; a key is therefore ASCII below 0x80,
// 1 to 32 bytes, and the longest of hashicorp/raft's field names is 18.
const maxKeyBytes = 32

// DefaultLimits are what every shard's transport enforces. An entry's data
// is one shard's part of a request, so at most a frame
// (wire.MaxFrameBytes); a configuration of a thousand servers is some tens
// of KiB; the structs of hashicorp/raft's RPCs have a dozen fields and
// nest three deep (request, Entries, entry).
//
// go-msgpack grows a large value 256 KiB at a time and copies it at each
// step, so decoding a value of n bytes copies about n*n/512 KiB: 8 GiB
// for a full frame. That is hashicorp/raft's cost for an honest entry as
// well, and why only a key Data may be long.
var DefaultLimits = Limits{
	MaxItems:   MaxAppendEntries,
	MaxBytes:   wire.MaxFrameBytes + 1<<20,
	MaxField:   1 << 20,
	MaxDepth:   8,
	MaxMessage: MaxAppendEntries*(wire.MaxFrameBytes+2<<20) + 1<<20,
}

// ErrRefused is wrapped by the error that a guarded connection's Read
// returns for a message past its Limits, or not shaped as hashicorp/raft
// sends it.
var ErrRefused = errors.New("raft message refused")
