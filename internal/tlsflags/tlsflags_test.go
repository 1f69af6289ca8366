package tlsflags_test

import (
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/auth"
	"github.com/batchkv/batchkv/client"
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

// TestUsageNamesFILE: the flag list reads "-tls-ca FILE", not a command
// in backquotes taken as the argument's name.
func TestUsageNamesFILE(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	tlsflags.Register(fs)
	var out strings.Builder
	fs.SetOutput(&out)
	fs.PrintDefaults()
	for _, want := range []string{"-tls-ca FILE", "-tls-cert FILE", "-tls-key FILE"} {
		require.Contains(t, out.String(), want)
	}
	require.NotContains(t, out.String(), "-tls-ca kvsctl")
}

// TestHint: each TLS mismatch gets the flags that fix it; other errors
// pass unchanged.
func TestHint(t *testing.T) {
	require.NoError(t, tlsflags.Hint(nil))
	plain := errors.New("connection refused")
	require.Equal(t, plain, tlsflags.Hint(plain))
	wants := fmt.Errorf("x: %w", client.ErrServerWantsTLS)
	require.ErrorContains(t, tlsflags.Hint(wants), "give -tls-ca ca.crt -tls-cert NAME.crt -tls-key NAME.key")
	require.ErrorIs(t, tlsflags.Hint(wants), client.ErrServerWantsTLS)
	require.ErrorContains(t, tlsflags.Hint(fmt.Errorf("x: %w", client.ErrServerNotTLS)), "leave out -tls-ca")
	host := fmt.Errorf("tls: %w", x509.HostnameError{Certificate: &x509.Certificate{DNSNames: []string{"node0"}}, Host: "127.0.0.1"})
	require.ErrorContains(t, tlsflags.Hint(host), "-role node -hosts 127.0.0.1")
	require.True(t, tlsflags.IsMismatch(host))
	require.True(t, tlsflags.IsMismatch(wants))
	require.False(t, tlsflags.IsMismatch(plain))
	require.False(t, tlsflags.IsMismatch(nil))
}
