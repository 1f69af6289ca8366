package mapfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/internal/powercut"
	"github.com/batchkv/batchkv/kvs/replica/durablefs"
	"github.com/batchkv/batchkv/kvs/replica/raftstore"
	"github.com/batchkv/batchkv/shard"
)

// The test below cuts the power (internal/powercut, strict POSIX mode: a
// file's fsync does not save its name) after each durable step of a
// replica, and checks what survives. It pairs the real step with the
// step as it was before (no directory sync), which the same check must
// catch: that shows the check can fail and that the fix matters.

func cutPower(t *testing.T, fs *powercut.ChildFS) {
	t.Helper()
	rep, err := fs.Cut()
	require.NoError(t, err)
	t.Logf("cut: %s", rep)
}

func TestPowerCutKeepsSavedMap(t *testing.T) {
	layout, err := shard.New([]string{"a:1", "b:1", "c:1"}, 3, 3, 0)
	require.NoError(t, err)
	m := shard.Initial(layout, 0)
	for _, c := range []struct {
		name  string
		save  func(dir string) error
		keeps bool
	}{
		{"Save", func(dir string) error { return Save(dir, m) }, true},
		{"planted: rename without syncing the directory", func(dir string) error {
			if err := durablefs.MkdirAllDurable(dir, raftstore.DataDirMode); err != nil {
				return err
			}
			f, err := os.Create(filepath.Join(dir, Name+".tmp"))
			if err != nil {
				return err
			}
			_, err = f.WriteString(`{}`)
			require.NoError(t, f.Sync())
			require.NoError(t, f.Close())
			if err != nil {
				return err
			}
			return os.Rename(filepath.Join(dir, Name+".tmp"), filepath.Join(dir, Name))
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := powercut.MountForTest(t, powercut.Strict)
			dir := filepath.Join(fs.Dir(), "data")
			require.NoError(t, c.save(dir))
			cutPower(t, fs)
			got, err := Load(dir)
			require.NoError(t, err)
			if c.keeps {
				require.NotNil(t, got, "the saved map is gone after a power cut")
				require.Equal(t, m.Epoch, got.Epoch)
			} else {
				require.Nil(t, got, "the check missed a map whose rename was never synced")
			}
		})
	}
}
