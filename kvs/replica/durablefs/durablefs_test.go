package durablefs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/internal/powercut"
)

// TestPowerCutKeepsRemovedReplicaRemoved removes a replica's directory,
// cuts the power (ext4 mode), and checks that it stays gone; os.RemoveAll
// alone, the planted case, leaves it to come back.
func TestPowerCutKeepsRemovedReplicaRemoved(t *testing.T) {
	for _, c := range []struct {
		name   string
		remove func(dir string) error
		gone   bool
	}{
		{"RemoveDirDurably", RemoveDirDurably, true},
		{"planted: os.RemoveAll", os.RemoveAll, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := powercut.MountForTest(t, powercut.Ext4)
			dir := filepath.Join(fs.Dir(), "data", "shard-1")
			require.NoError(t, MkdirAllDurable(dir, 0o700))
			require.NoError(t, c.remove(dir))
			rep, err := fs.Cut()
			require.NoError(t, err)
			t.Logf("cut: %s", rep)
			_, err = os.Stat(dir)
			if c.gone {
				require.ErrorIs(t, err, os.ErrNotExist, "a removed replica's directory is back after a power cut")
				require.NoError(t, RemoveTrash(filepath.Dir(dir)))
			} else {
				require.NoError(t, err, "the check missed a removal that a power cut undoes")
			}
		})
	}
}
