package replica

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
)

// The errors of the replicas. Write and ReadBarrier answer ErrNotLeader
// (or ErrHandingOver, one of its kind) when the request was certainly not
// taken, ErrNoSpace when a write was refused for full disks, and
// ErrLeadershipLost when its fate is unknown; CommitMap answers ErrEpoch;
// Accept ErrNoSuchShard. Damaged data is raftstore.ErrCorrupt.
var (
	// ErrLeadershipLost says a write's leader lost its leadership before
	// the write committed: it may or may not be applied later.
	ErrLeadershipLost = raft.ErrLeadershipLost

	// ErrNotLeader says this replica cannot serve the shard now: it is
	// not the leader, or not yet ready to serve reads in its term.
	ErrNotLeader = errors.New("replica: not the leader")

	// ErrHandingOver says this replica, the leader, is handing its
	// leadership to another and took nothing in meanwhile. It is an
	// ErrNotLeader; AwaitNewLeader names the next leader.
	ErrHandingOver = fmt.Errorf("%w: handing leadership over", ErrNotLeader)

	// ErrNoSpace says a write was refused because a majority of its
	// shard's replicas have full disks: it was not applied. Reads are
	// still served.
	ErrNoSpace = errors.New("replica: no space: a majority of the shard's replicas have full disks")

	// ErrEpoch says a map change was based on a map that is no longer
	// the current one: someone else changed it first.
	ErrEpoch = errors.New("replica: the map changed since it was read")

	// ErrNoSuchShard says a Raft connection named a shard this server
	// does not host.
	ErrNoSuchShard = errors.New("replica: this server hosts no replica of that shard")
)
