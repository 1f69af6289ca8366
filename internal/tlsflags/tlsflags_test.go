package tlsflags_test

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/auth"
	"github.com/batchkv/batchkv/internal/tlsflags"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, auth.InitCA(dir))
	require.NoError(t, auth.Issue(dir, "c", auth.RoleClient, nil))
	parse := func(args ...string) (*auth.Identity, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		tf := tlsflags.Register(fs)
		require.NoError(t, fs.Parse(args))
		return tf.Load()
	}
	id, err := parse()
	require.NoError(t, err)
	require.Nil(t, id, "no flags: plaintext")
	id, err = parse("-tls-ca", filepath.Join(dir, "ca.crt"), "-tls-cert", filepath.Join(dir, "c.crt"), "-tls-key", filepath.Join(dir, "c.key"))
	require.NoError(t, err)
	require.Equal(t, auth.RoleClient, id.Role)
	_, err = parse("-tls-ca", filepath.Join(dir, "ca.crt"))
	require.Error(t, err, "a partial set is an error, not plaintext")
}
