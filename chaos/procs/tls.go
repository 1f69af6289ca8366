package procs

import (
	"path/filepath"

	"github.com/batchkv/batchkv/auth"
	"github.com/batchkv/batchkv/client"
)

// makeCerts makes a CA, a node certificate for 127.0.0.1 that every
// server shares, and a client certificate for the loads, under Dir/certs.
func (c *Servers) makeCerts() error {
	dir := filepath.Join(c.cfg.Dir, "certs")
	certs, err := auth.MakeLocal(dir, []string{"127.0.0.1"})
	if err != nil {
		return err
	}
	// The harness's admin calls ask for content digests, which only node
	// certificates get; a node certificate may change membership too.
	c.Admin = client.Admin{TLS: certs.Node.ClientConfig()}
	c.ClientTLS = certs.Client.ClientConfig()
	c.tlsArgs = []string{"-tls-ca", filepath.Join(dir, auth.CACertFile),
		"-tls-cert", filepath.Join(dir, "node.crt"), "-tls-key", filepath.Join(dir, "node.key")}
	return nil
}
