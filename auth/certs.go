package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// Role is what a certificate's holder may do, written in its subject's
// organizational unit.
type Role string

const (
	// RoleNode is a server: it may serve clients and speak Raft with the
	// other servers of the shards it hosts.
	RoleNode Role = "node"
	// RoleClient may do everything a client does (batches, the legacy
	// Get/Put, layout and status), never Raft.
	RoleClient Role = "client"
	// RoleAdmin may do everything a client does, and change the
	// cluster's membership (kvsctl add-server, remove-server, move,
	// rebalance); never Raft.
	RoleAdmin Role = "admin"
)

// Validity of what InitCA and Issue make.
const (
	caValidity   = 10 * 365 * 24 * time.Hour
	certValidity = 2 * 365 * 24 * time.Hour
	// organization is written in every certificate's subject.
	organization = "batchkv"
)

// Files of a certificate directory.
const (
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
)

// ErrExists says InitCA or Issue would overwrite a file.
var ErrExists = errors.New("auth: file exists")

// validName is what a certificate's file name may be: it becomes
// DIR/NAME.crt and DIR/NAME.key.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// InitCA makes a new cluster CA: dir/ca.crt and dir/ca.key (mode 0600),
// creating dir (mode 0700) if needed. It refuses to overwrite a CA.
func InitCA(dir string) error {
	if err := mkdirDurable(dir); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{Organization: []string{organization}, CommonName: "batchkv cluster CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	return writePair(dir, "ca", der, key)
}

// Issue makes a certificate for name with role, signed by dir's CA, and
// writes dir/NAME.crt and dir/NAME.key (mode 0600). A node certificate
// names the hosts (DNS names or IP addresses) its server is reached at;
// at least one is required. A client or admin certificate names none.
func Issue(dir, name string, role Role, hosts []string) error {
	if !validName.MatchString(name) || name == "ca" {
		return fmt.Errorf("auth: certificate name %q: want letters, digits, '.', '_' or '-', and not \"ca\"", name)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{Organization: []string{organization}, OrganizationalUnit: []string{string(role)}, CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	switch role {
	case RoleNode:
		if len(hosts) == 0 {
			return errors.New("auth: a node certificate needs the hosts its server is reached at")
		}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else if h != "" {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
	case RoleClient, RoleAdmin:
		if len(hosts) > 0 {
			return fmt.Errorf("auth: a %s certificate names no hosts", role)
		}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	default:
		return fmt.Errorf("auth: role %q: want %q, %q or %q", role, RoleNode, RoleClient, RoleAdmin)
	}
	caCert, caKey, err := loadCA(dir)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	return writePair(dir, name, der, key)
}

func loadCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, CACertFile))
	if err != nil {
		return nil, nil, fmt.Errorf("auth: the CA (kvsctl certs init first): %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if err != nil {
		return nil, nil, fmt.Errorf("auth: the CA key: %w", err)
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, errors.New("auth: the CA files are not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("auth: the CA certificate: %w", err)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("auth: the CA key: %w", err)
	}
	return cert, key, nil
}

// writePair writes dir/name.crt and dir/name.key, both 0600, refusing to
// overwrite either.
func writePair(dir, name string, der []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	crt, kf := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	for _, f := range []string{crt, kf} {
		st, err := os.Stat(f)
		switch {
		case err == nil && st.Size() == 0:
			return fmt.Errorf("%w: %s is empty (a crash while an older version wrote it?): remove it and run again", ErrExists, f)
		case err == nil:
			return fmt.Errorf("%w: %s", ErrExists, f)
		}
	}
	if err := writeExclusive(kf, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})); err != nil {
		return err
	}
	return writeExclusive(crt, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}
