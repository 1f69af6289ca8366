package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/batchkv/batchkv/auth"
)

// checkEnoughPeers refuses an -rf that the servers given cannot hold,
// saying how to give them. A joining server takes the cluster's RF.
func checkEnoughPeers(rf int, peers []string, join string) error {
	if rf <= 1 || join != "" || len(peers) >= rf {
		return nil
	}
	have := "only this one (no -peers)"
	if len(peers) > 0 {
		have = fmt.Sprintf("%d in -peers", len(peers))
	}
	example := make([]string, rf)
	for i := range example {
		example[i] = fmt.Sprintf("127.0.0.%d:%d", i+1, 8080+i)
	}
	return fmt.Errorf("-rf %d keeps every shard on %d servers, and there is %s.\n"+
		"  Start %d servers, each with the same -peers listing all of them and its own -host and -port, e.g.\n"+
		"    kvsserver -host 127.0.0.1 -port 8080 -rf %d -peers %s   (and likewise for the others)\n"+
		"  or let the script start them: ./run-cluster.sh %d 1 \"-rf %d\"",
		rf, rf, have, rf, rf, strings.Join(example, ","), rf, rf)
}

// checkCertNames refuses a TLS server whose certificate does not name the
// address peers and clients dial: self when set, else the -host it
// listens on (unless that is every interface, which names no address).
// Clients verify that name, so such a server would refuse everyone.
func checkCertNames(id *auth.Identity, self, host, certFile string) error {
	if id == nil {
		return nil
	}
	dialled, flagName := host, "-host"
	if self != "" {
		dialled, flagName = self, "-self"
		if h, _, err := net.SplitHostPort(self); err == nil {
			dialled = h
		}
	}
	if dialled == "" || dialled == "0.0.0.0" || dialled == "::" {
		return nil
	}
	if err := id.Cert.Leaf.VerifyHostname(dialled); err == nil {
		return nil
	}
	names := auth.HostsOf(id.Cert.Leaf)
	return fmt.Errorf("-tls-cert %s names %s, not %s (%s), the address clients and peers dial: they would refuse this server.\n"+
		"  Issue a certificate that names it: kvsctl certs issue -dir DIR -name NAME -role node -hosts %s\n"+
		"  or start with %s set to a name the certificate carries",
		certFile, quoteList(names), dialled, flagName, dialled, flagName)
}

// quoteList is names as a readable list: "a, b and c", or "no host".
func quoteList(names []string) string {
	switch len(names) {
	case 0:
		return "no host"
	case 1:
		return strconv.Quote(names[0])
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}
