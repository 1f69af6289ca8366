package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/batchkv/batchkv/auth"
	"github.com/batchkv/batchkv/internal/cli"
)

const certsUsage = `usage:
  kvsctl certs init -dir DIR
      make a cluster CA: DIR/ca.crt and DIR/ca.key
  kvsctl certs issue -dir DIR -name NAME -role node [-hosts h1,h2,...]
      a server's certificate, for every host name or IP address clients and
      peers dial it at (its -host, or the host of its -self); without -hosts,
      127.0.0.1, ::1 and localhost, where a server with the default -host is
      dialled. The server refuses to start with one that does not name it.
  kvsctl certs issue -dir DIR -name NAME -role client
      a client's certificate
  kvsctl certs issue -dir DIR -name NAME -role admin
      an operator's certificate: a client's, which may also change the
      cluster's membership (add-server, remove-server, replace-server, move,
      rebalance)
Both write DIR/NAME.crt and DIR/NAME.key (keys mode 0600) and never overwrite a file.`

// localHosts are the names a node certificate carries without -hosts:
// where a server listening on the default -host (127.0.0.1) is dialled.
var localHosts = []string{"127.0.0.1", "::1", "localhost"}

// certs runs `kvsctl certs init|issue ...`.
func certs(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, certsUsage)
		return errors.New("certs: init or issue?")
	}
	if wantsHelp(args[:1]) {
		fmt.Fprintln(stdout, certsUsage)
		return cli.ErrHelpShown
	}
	fs := flag.NewFlagSet("kvsctl certs "+args[0], flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), certsUsage) }
	dir := fs.String("dir", "", "directory of the CA and the certificates")
	name := fs.String("name", "", "issue: the certificate's name (its files are NAME.crt and NAME.key)")
	role := fs.String("role", "", "issue: node (a server), client, or admin (a client that may change membership)")
	hosts := fs.String("hosts", "", "issue -role node: comma-separated host names and IP addresses the server is dialled at (default "+strings.Join(localHosts, ",")+")")
	if err := cli.Parse(fs, args[1:], stdout, os.Stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("certs %s: unexpected arguments %q", args[0], fs.Args())
	}
	if *dir == "" {
		return fmt.Errorf("certs %s: -dir is required", args[0])
	}
	switch args[0] {
	case "init":
		if err := auth.InitCA(*dir); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s and %s\n", filepath.Join(*dir, auth.CACertFile), filepath.Join(*dir, auth.CAKeyFile))
		return nil
	case "issue":
		var hs []string
		switch {
		case *hosts != "":
			hs = strings.Split(*hosts, ",")
		case auth.Role(*role) == auth.RoleNode:
			hs = localHosts
		}
		if err := auth.Issue(*dir, *name, auth.Role(*role), hs); err != nil {
			return err
		}
		named := ""
		if len(hs) > 0 {
			named = ", for " + strings.Join(hs, ", ")
		}
		fmt.Fprintf(stdout, "wrote %s and %s (role %s%s)\n", filepath.Join(*dir, *name+".crt"), filepath.Join(*dir, *name+".key"), *role, named)
		return nil
	}
	fmt.Fprintln(stdout, certsUsage)
	return fmt.Errorf("certs %q: want init or issue", args[0])
}
