package kvs_test

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/internal/clustertest"
	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/kvs/replica"
	"github.com/batchkv/batchkv/wire"
)

// TestRaftLogsKeptWithinTheirBytes: 256 MiB of 64 KiB values, in 1 MiB
// batches over 64 keys, leave a server bounded to 64 MiB of Raft log
// with at most twice that in its data dir once a snapshot has come; the
// same writes under entry counts only (the planted case: 256 entries,
// far below a snapshot's 8,192) keep all 256 MiB.
func TestRaftLogsKeptWithinTheirBytes(t *testing.T) {
	const bound = 64 << 20
	bounded := writeLargeValues(t, bound)
	deadline := time.Now().Add(15 * time.Second)
	for size := dirBytes(t, bounded); size > 2*bound; size = dirBytes(t, bounded) {
		require.True(t, time.Now().Before(deadline), "the bounded data dir stays at %d MiB, over twice its bound", size>>20)
		time.Sleep(250 * time.Millisecond)
	}

	unbounded := writeLargeValues(t, 0)
	time.Sleep(3 * time.Second) // as long as a bounded log takes to be trimmed
	require.Greater(t, dirBytes(t, unbounded), int64(240<<20), "entry counts alone keep every entry")
}

// writeLargeValues starts a one-server replicated cluster whose Raft logs
// are bounded to bound bytes (0: none), writes 256 MiB to it, and returns
// its data dir.
func writeLargeValues(t *testing.T, bound int64) string {
	var dir string
	// raft's own snapshot check an hour apart: the bound's own snapshots
	// are what must trim the log.
	timing := replica.DefaultTiming()
	timing.SnapshotInterval = time.Hour
	c := clustertest.New(t, 1, 1, 1, clustertest.WithTiming(timing), clustertest.WithConfig(func(_ int, cfg *kvs.Config) {
		cfg.RaftLogBytes, dir = bound, cfg.DataDir
	}))
	cl := c.Client(t)
	value := strings.Repeat("v", 64<<10)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for b := range 256 {
		ops := make([]wire.Op, 16)
		for i := range ops {
			ops[i] = wire.Op{Code: wire.OpPut, Key: fmt.Sprintf("k%d", (b*16+i)%64), Value: value}
		}
		_, err := cl.Do(ctx, ops)
		require.NoError(t, err)
	}
	return dir
}

// dirBytes returns the bytes of the files under dir.
func dirBytes(t *testing.T, dir string) int64 {
	var n int64
	require.NoError(t, filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return nil
	}))
	return n
}
