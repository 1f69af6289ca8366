package replica

import (
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
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
	for _, format := range LogFormats {
		t.Run(string(format), func(t *testing.T) {
			gc := groupConfig{shard: 0, dir: filepath.Join(t.TempDir(), "shard-0"), logFormat: format}
			logs, _, err := openStores(gc, hclog.NewNullLogger())
			require.NoError(t, err)
			defer func() { _ = closeLogStore(logs) }()
			cached, err := raft.NewLogCache(logCacheEntries, logs)
			require.NoError(t, err)
			var store raft.LogStore = cached
			m, ok := store.(raft.MonotonicLogStore)
			require.Equal(t, format == LogWAL, ok && m.IsMonotonic())
		})
	}
}
