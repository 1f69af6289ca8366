package auth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
)

// Identity is a loaded certificate, its key and the cluster CA: what a
// server, client or kvsctl needs to speak TLS in a cluster.
type Identity struct {
	// Cert is the holder's certificate and key.
	Cert tls.Certificate
	// CA verifies the other side's certificate.
	CA *x509.CertPool
	// Role is the role written in Cert.
	Role Role
}

// Load reads a CA certificate, a certificate and its key (PEM files).
func Load(caFile, certFile, keyFile string) (*Identity, error) {
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("auth: %s holds no PEM certificate", caFile)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	cert.Leaf = leaf
	return &Identity{Cert: cert, CA: pool, Role: RoleOf(leaf)}, nil
}

// Local is the certificates of a cluster run on one machine, loaded.
type Local struct {
	// Node is the certificate every server shares.
	Node *Identity
	// Client may do what clients do.
	Client *Identity
	// Admin may also change the cluster's membership.
	Admin *Identity
}

// MakeLocal makes the certificates of a cluster run on one machine, as
// the chaos harness and the tests run it: a CA in dir, a node certificate
// named "node" for hosts that every server shares, a client certificate
// named "client" and an admin certificate named "admin".
func MakeLocal(dir string, hosts []string) (*Local, error) {
	if err := InitCA(dir); err != nil {
		return nil, err
	}
	if err := Issue(dir, "node", RoleNode, hosts); err != nil {
		return nil, err
	}
	var l Local
	for _, c := range []struct {
		name string
		role Role
		id   **Identity
	}{{"node", RoleNode, &l.Node}, {"client", RoleClient, &l.Client}, {"admin", RoleAdmin, &l.Admin}} {
		if c.role != RoleNode {
			if err := Issue(dir, c.name, c.role, nil); err != nil {
				return nil, err
			}
		}
		id, err := Load(filepath.Join(dir, CACertFile), filepath.Join(dir, c.name+".crt"), filepath.Join(dir, c.name+".key"))
		if err != nil {
			return nil, err
		}
		*c.id = id
	}
	return &l, nil
}

// ServerConfig returns the tls.Config of a listener: TLS 1.3, this
// identity's certificate, and a client certificate signed by the CA
// required of every connection.
func (id *Identity) ServerConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{id.Cert},
		ClientCAs: id.CA, ClientAuth: tls.RequireAndVerifyClientCert}
}

// ClientConfig returns the tls.Config of a dialer: TLS 1.3, this
// identity's certificate, and the server's certificate verified against
// the CA and the host dialled (see ForAddr).
func (id *Identity) ClientConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{id.Cert}, RootCAs: id.CA}
}

// ForAddr returns cfg with ServerName set to addr's host, unless cfg sets
// one: the server's certificate must name the host it is dialled at.
func ForAddr(cfg *tls.Config, addr string) *tls.Config {
	if cfg.ServerName != "" {
		return cfg
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	c := cfg.Clone()
	c.ServerName = host
	return c
}

// RoleOf returns the role a certificate of this cluster's CA was issued
// with, or "" for any other certificate.
func RoleOf(cert *x509.Certificate) Role {
	if !slices.Contains(cert.Subject.Organization, organization) || len(cert.Subject.OrganizationalUnit) != 1 {
		return ""
	}
	switch r := Role(cert.Subject.OrganizationalUnit[0]); r {
	case RoleNode, RoleClient, RoleAdmin:
		return r
	}
	return ""
}

// HostsOf returns the hosts a node certificate names: its DNS names and
// IP addresses, as strings.
func HostsOf(cert *x509.Certificate) []string {
	hosts := slices.Clone(cert.DNSNames)
	for _, ip := range cert.IPAddresses {
		hosts = append(hosts, ip.String())
	}
	return hosts
}

// ErrNotMember says a connection's certificate may not speak Raft for the
// shard it asked for.
var ErrNotMember = errors.New("auth: not a member of this shard")

// CheckRaftPeer returns nil if a verified peer certificate may speak Raft
// for a shard whose replicas are at replicas (host:port): it has the node
// role, and names the host of one of them.
func CheckRaftPeer(cert *x509.Certificate, replicas []string) error {
	if cert == nil {
		return fmt.Errorf("%w: no certificate", ErrNotMember)
	}
	if r := RoleOf(cert); r != RoleNode {
		return fmt.Errorf("%w: certificate %q has role %q, not %q", ErrNotMember, cert.Subject.CommonName, r, RoleNode)
	}
	for _, rep := range replicas {
		host, _, err := net.SplitHostPort(rep)
		if err != nil {
			continue
		}
		if cert.VerifyHostname(host) == nil {
			return nil
		}
	}
	return fmt.Errorf("%w: certificate %q names %v, none of the replicas %v", ErrNotMember, cert.Subject.CommonName, HostsOf(cert), replicas)
}
