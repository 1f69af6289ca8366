// Package tlsflags gives every command the same TLS flags: -tls-ca,
// -tls-cert and -tls-key, the files that `kvsctl certs` writes.
//
//	tf := tlsflags.Register(fs)
//	fs.Parse(args)
//	id, err := tf.Load() // nil, nil when no flag is set: plaintext
package tlsflags

import (
	"errors"
	"flag"

	"github.com/batchkv/batchkv/auth"
)

// Flags holds the values of the TLS flags.
type Flags struct {
	CA, Cert, Key string
}

// Register adds -tls-ca, -tls-cert and -tls-key to fs.
func Register(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	fs.StringVar(&f.CA, "tls-ca", "", "cluster CA certificate (`kvsctl certs init`); with -tls-cert and -tls-key, every connection is mutual TLS 1.3")
	fs.StringVar(&f.Cert, "tls-cert", "", "this process's certificate (`kvsctl certs issue`)")
	fs.StringVar(&f.Key, "tls-key", "", "the key of -tls-cert")
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
	return nil, errors.New("-tls-ca, -tls-cert and -tls-key go together")
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
