// Package tlsflags gives every command the same TLS flags: -tls-ca,
// -tls-cert and -tls-key, the files that `kvsctl certs` writes.
//
//	tf := tlsflags.Register(fs)
//	fs.Parse(args)
//	id, err := tf.Load() // nil, nil when no flag is set: plaintext
package tlsflags

import (
	"crypto/x509"
	"errors"
	"flag"
	"fmt"

	"github.com/batchkv/batchkv/auth"
	"github.com/batchkv/batchkv/client"
)

// Flags holds the values of the TLS flags.
type Flags struct {
	CA, Cert, Key string
}

// Register adds -tls-ca, -tls-cert and -tls-key to fs. The backquoted
// word of each usage is the argument name the flag package prints
// (-tls-ca FILE).
func Register(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	fs.StringVar(&f.CA, "tls-ca", "", "the cluster CA's certificate `FILE` (ca.crt, made by kvsctl certs init); with -tls-cert and -tls-key, every connection is mutual TLS 1.3")
	fs.StringVar(&f.Cert, "tls-cert", "", "this process's certificate `FILE` (NAME.crt, made by kvsctl certs issue)")
	fs.StringVar(&f.Key, "tls-key", "", "the key `FILE` of -tls-cert (NAME.key)")
	return f
}

// Load returns the identity the flags name, or nil when none is set.
func (f *Flags) Load() (*auth.Identity, error) {
	switch n := count(f.CA, f.Cert, f.Key); n {
	case 0:
		return nil, nil
	case 3:
		return auth.Load(f.CA, f.Cert, f.Key)
	}
	return nil, errors.New("-tls-ca, -tls-cert and -tls-key go together: give all three, or none for plaintext")
}

// IsMismatch reports whether err is a TLS mismatch that Hint explains:
// no connection to that server can work until the flags or certificates
// change.
func IsMismatch(err error) bool {
	return Hint(err) != err
}

// Hint returns err with what to do about it added when it is a TLS
// mismatch the command's flags can fix: a TLS server dialled without the
// flags, a plaintext server dialled with them, a server certificate that
// does not name the address dialled, or one from another CA. Other
// errors come back as they are.
func Hint(err error) error {
	var hostErr x509.HostnameError
	var authErr x509.UnknownAuthorityError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, client.ErrServerWantsTLS):
		return fmt.Errorf("%w\n  give -tls-ca ca.crt -tls-cert NAME.crt -tls-key NAME.key (a client or admin certificate: kvsctl certs issue -dir DIR -name NAME -role client)", err)
	case errors.Is(err, client.ErrServerNotTLS):
		return fmt.Errorf("%w\n  leave out -tls-ca, -tls-cert and -tls-key, or start the servers with them", err)
	case errors.As(err, &hostErr):
		return fmt.Errorf("%w\n  the server's certificate must name the address you dial: dial a name it carries, or issue it again with that address (kvsctl certs issue -dir DIR -name NAME -role node -hosts %s)", err, hostErr.Host)
	case errors.As(err, &authErr):
		return fmt.Errorf("%w\n  the server's certificate is not signed by -tls-ca: give the CA the cluster's certificates came from", err)
	}
	return err
}

func count(s ...string) int {
	n := 0
	for _, v := range s {
		if v != "" {
			n++
		}
	}
	return n
}
