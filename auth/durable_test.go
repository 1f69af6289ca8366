package auth

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/internal/powercut"
)

// TestPowerCutKeepsCertificates makes a CA and a certificate on the
// power-cut filesystem (strict POSIX), cuts the power, and issues another
// certificate from the CA that survived. The planted case writes the key
// as the code did before (O_EXCL, no sync): a cut leaves nothing usable.
func TestPowerCutKeepsCertificates(t *testing.T) {
	fs := powercut.MountForTest(t, powercut.Strict)
	dir := filepath.Join(fs.Dir(), "certs")
	require.NoError(t, InitCA(dir))
	require.NoError(t, Issue(dir, "node", RoleNode, []string{"127.0.0.1"}))
	_, err := fs.Cut()
	require.NoError(t, err)
	require.NoError(t, Issue(dir, "client", RoleClient, nil), "the CA is unusable after a power cut")
	_, err = os.Stat(filepath.Join(dir, "node.key"))
	require.NoError(t, err, "node.key is gone after a power cut")

	t.Run("planted: write without sync", func(t *testing.T) {
		plain := filepath.Join(fs.Dir(), "plain")
		require.NoError(t, os.Mkdir(plain, 0o700))
		require.NoError(t, syncDir(fs.Dir()))
		require.NoError(t, os.WriteFile(filepath.Join(plain, CAKeyFile), []byte("key"), 0o600))
		require.NoError(t, syncDir(plain)) // the name is saved, the content is not
		_, err := fs.Cut()
		require.NoError(t, err)
		st, err := os.Stat(filepath.Join(plain, CAKeyFile))
		require.NoError(t, err)
		require.Zero(t, st.Size(), "the check missed a key written without fsync")
		err = InitCA(plain)
		require.ErrorIs(t, err, ErrExists)
		require.Contains(t, err.Error(), "is empty", "a zero-length leftover key needs a clear message")
	})
}
