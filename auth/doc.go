// Package auth makes and checks the certificates of a batchkv cluster: a
// cluster CA, node certificates (servers, which also speak Raft to each
// other) and client certificates. Every connection of a cluster run with
// TLS is TLS 1.3 with certificates verified both ways; the role written in
// a certificate then decides what its holder may do.
//
// Make a cluster's certificates (kvsctl certs wraps these):
//
//	auth.InitCA(dir)                                     // dir/ca.crt, dir/ca.key
//	auth.Issue(dir, "node0", auth.RoleNode, []string{"node0", "10.0.0.1"})
//	auth.Issue(dir, "alice", auth.RoleClient, nil)
//
// Load them and build tls.Configs:
//
//	id, _ := auth.Load(dir+"/ca.crt", dir+"/node0.crt", dir+"/node0.key")
//	srv := id.ServerConfig() // for a listener: client certificates required
//	cli := id.ClientConfig() // for dialing a server or a Raft peer
//
// A server asks PeerRole and PeerHosts of each connection's certificate:
// only RoleNode may speak Raft, and only for a shard one of whose replicas
// sits on a host the certificate names.
package auth
