package replica

import (
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/kvs/replica/raftstore"
)

// TestLogStoreSaysItIsMonotonic: the log store Raft is given (the cache
// over the space-watching log over the checksummed log) says it is
// monotonic exactly when the store at the bottom is (raft-wal, not
// BoltDB). Raft drops a monotonic store's whole log when it installs a
// snapshot past it; raft-wal refuses an entry after a gap, so a wrapper
// that hid the interface left a follower whose log ended before the
// snapshot unable to append anything after it (seen as "non-monotonic log
// entries: tried to append index 9241 after 6657" and a shard that never
// converged, in a power cut during a move).
func TestLogStoreSaysItIsMonotonic(t *testing.T) {
	for _, format := range raftstore.LogFormats {
		t.Run(string(format), func(t *testing.T) {
			cfg := raftstore.Config{Shard: 0, Dir: filepath.Join(t.TempDir(), "shard-0"), Format: format}
			logs, _, err := raftstore.Open(cfg)
			require.NoError(t, err)
			defer func() { _ = raftstore.Close(logs) }()
			cached, err := raft.NewLogCache(logCacheEntries, logs)
			require.NoError(t, err)
			var store raft.LogStore = cached
			m, ok := store.(raft.MonotonicLogStore)
			require.Equal(t, format == raftstore.LogWAL, ok && m.IsMonotonic())
		})
	}
}
