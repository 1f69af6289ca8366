package auth_test

import (
	"crypto/tls"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/auth"
)

// newCA makes a CA in a temp dir with a node certificate for 127.0.0.1 and
// a client certificate, and returns the dir.
func newCA(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "certs")
	require.NoError(t, auth.InitCA(dir))
	require.NoError(t, auth.Issue(dir, "node0", auth.RoleNode, []string{"127.0.0.1", "localhost"}))
	require.NoError(t, auth.Issue(dir, "alice", auth.RoleClient, nil))
	return dir
}

func load(t *testing.T, dir, name string) *auth.Identity {
	t.Helper()
	id, err := auth.Load(filepath.Join(dir, auth.CACertFile), filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key"))
	require.NoError(t, err)
	return id
}

func TestFilesAndModes(t *testing.T) {
	dir := newCA(t)
	st, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), st.Mode().Perm())
	for _, f := range []string{"ca.key", "ca.crt", "node0.key", "node0.crt", "alice.key", "alice.crt"} {
		st, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
		require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), f)
	}
	require.ErrorIs(t, auth.InitCA(dir), auth.ErrExists, "a CA is never overwritten")
	require.ErrorIs(t, auth.Issue(dir, "alice", auth.RoleClient, nil), auth.ErrExists)
}

func TestIssueRejectsBadInput(t *testing.T) {
	dir := newCA(t)
	cases := []struct {
		name, cert string
		role       auth.Role
		hosts      []string
	}{
		{"node without hosts", "n1", auth.RoleNode, nil},
		{"client with hosts", "c1", auth.RoleClient, []string{"h"}},
		{"admin with hosts", "a1", auth.RoleAdmin, []string{"h"}},
		{"unknown role", "x1", auth.Role("root"), nil},
		{"path in the name", "../evil", auth.RoleClient, nil},
		{"the CA's own name", "ca", auth.RoleClient, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Error(t, auth.Issue(dir, c.cert, c.role, c.hosts))
		})
	}
	require.Error(t, auth.Issue(t.TempDir(), "n", auth.RoleClient, nil), "no CA in the dir")
}

func TestRolesAndHosts(t *testing.T) {
	dir := newCA(t)
	node, alice := load(t, dir, "node0"), load(t, dir, "alice")
	require.Equal(t, auth.RoleNode, node.Role)
	require.Equal(t, auth.RoleClient, alice.Role)
	require.ElementsMatch(t, []string{"127.0.0.1", "localhost"}, auth.HostsOf(node.Cert.Leaf))

	cases := []struct {
		name     string
		id       *auth.Identity
		replicas []string
		ok       bool
	}{
		{"node on a replica's host", node, []string{"127.0.0.2:1", "127.0.0.1:8080"}, true},
		{"node by DNS name", node, []string{"localhost:8080"}, true},
		{"node on no replica's host", node, []string{"127.0.0.2:8080", "127.0.0.3:8080"}, false},
		{"client certificate", alice, []string{"127.0.0.1:8080"}, false},
		{"no replicas", node, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := auth.CheckRaftPeer(c.id.Cert.Leaf, c.replicas)
			if c.ok {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, auth.ErrNotMember)
			}
		})
	}
	require.ErrorIs(t, auth.CheckRaftPeer(nil, []string{"127.0.0.1:1"}), auth.ErrNotMember)
}

// handshake serves one TLS connection with srv and dials it with cli; it
// returns the role the server saw and the client's handshake error.
func handshake(t *testing.T, srv, cli *tls.Config) (auth.Role, error) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", srv)
	require.NoError(t, err)
	defer func() { _ = ln.Close() }()
	roles := make(chan auth.Role, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			roles <- ""
			return
		}
		defer func() { _ = c.Close() }()
		tc := c.(*tls.Conn)
		_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
		if tc.Handshake() != nil || len(tc.ConnectionState().PeerCertificates) == 0 {
			roles <- ""
			return
		}
		roles <- auth.RoleOf(tc.ConnectionState().PeerCertificates[0])
		_, _ = io.WriteString(c, "ok")
	}()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(), auth.ForAddr(cli, ln.Addr().String()))
	if err == nil {
		// TLS 1.3 reports a refused client certificate on the first read.
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = io.ReadFull(c, make([]byte, 2))
		_ = c.Close()
	}
	return <-roles, err
}

func TestMutualTLS(t *testing.T) {
	dir, other := newCA(t), newCA(t)
	node, alice, stranger := load(t, dir, "node0"), load(t, dir, "alice"), load(t, other, "node0")

	role, err := handshake(t, node.ServerConfig(), alice.ClientConfig())
	require.NoError(t, err)
	require.Equal(t, auth.RoleClient, role)

	role, err = handshake(t, node.ServerConfig(), node.ClientConfig())
	require.NoError(t, err)
	require.Equal(t, auth.RoleNode, role)

	role, err = handshake(t, node.ServerConfig(), stranger.ClientConfig())
	require.Error(t, err, "a certificate of another CA is refused")
	require.Empty(t, role)

	noCert := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: node.CA}
	role, err = handshake(t, node.ServerConfig(), noCert)
	require.Error(t, err, "a client without a certificate is refused")
	require.Empty(t, role)

	old := alice.ClientConfig()
	old.MinVersion, old.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
	_, err = handshake(t, node.ServerConfig(), old)
	require.Error(t, err, "TLS 1.2 is refused")

	wrongHost := auth.ForAddr(alice.ClientConfig(), "127.0.0.1:1")
	wrongHost.ServerName = "elsewhere.example"
	_, err = handshake(t, node.ServerConfig(), wrongHost)
	require.Error(t, err, "a server certificate that does not name the host is refused")

	_, err = handshake(t, alice.ServerConfig(), node.ClientConfig())
	require.Error(t, err, "a client certificate cannot serve")
}

func TestMakeLocal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	certs, err := auth.MakeLocal(dir, []string{"127.0.0.1"})
	require.NoError(t, err)
	require.Equal(t, auth.RoleNode, certs.Node.Role)
	require.Equal(t, auth.RoleClient, certs.Client.Role)
	require.Equal(t, auth.RoleAdmin, certs.Admin.Role)
	require.NoError(t, auth.CheckRaftPeer(certs.Node.Cert.Leaf, []string{"127.0.0.1:8080"}))
	require.ErrorIs(t, auth.CheckRaftPeer(certs.Admin.Cert.Leaf, []string{"127.0.0.1:8080"}), auth.ErrNotMember, "an admin may not speak Raft")
	_, err = auth.MakeLocal(dir, []string{"127.0.0.1"})
	require.ErrorIs(t, err, auth.ErrExists, "never overwrites")
}
