package kvs

import (
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/batchkv/batchkv/auth"
	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/netcount"
	"github.com/batchkv/batchkv/kvs/backend"
	"github.com/batchkv/batchkv/kvs/replica"
	"github.com/batchkv/batchkv/kvs/replica/logbound"
	"github.com/batchkv/batchkv/kvs/replica/transport"
	"github.com/batchkv/batchkv/kvs/stats"
	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/ring"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// A server starts with one backend (package kvs/backend), which newBackend
// picks from its Config; a replicated server that joins a running cluster,
// or a memory-only one started again in one, first learns the cluster's
// map (backend.PlanRejoin).

// newBackend picks the backend cfg asks for, and the layout that
// KVService.Layout answers with (none for a replicated server, which
// answers its current shard map).
func newBackend(cfg *Config, stats *stats.Stats, apply *backend.Applier) (backend.Backend, wire.ClusterMap, error) {
	layout := wire.ClusterMap{Servers: cfg.Peers, VirtualNodes: cfg.VirtualNodes}
	switch {
	case cfg.Replicated():
		return newReplicatedBackend(cfg, apply, stats)
	case len(cfg.Peers) > 0:
		r, err := ring.New(cfg.Peers, cfg.VirtualNodes)
		if err != nil {
			return nil, layout, fmt.Errorf("kvs: %w", err)
		}
		fwd, err := client.New(client.Config{Servers: cfg.Peers, VirtualNodes: cfg.VirtualNodes, TLS: peerTLS(cfg)})
		if err != nil {
			return nil, wire.ClusterMap{}, fmt.Errorf("kvs: forwarding client: %w", err)
		}
		return backend.NewRing(cfg.Store, apply, stats, r, slices.Index(cfg.Peers, cfg.Self), fwd), layout, nil
	default:
		if cfg.Self != "" {
			layout.Servers = []string{cfg.Self}
		}
		return backend.NewLocal(cfg.Store, apply), layout, nil
	}
}

// newReplicatedBackend opens this server's replicas of its shards.
func newReplicatedBackend(cfg *Config, apply *backend.Applier, stats *stats.Stats) (backend.Backend, wire.ClusterMap, error) {
	servers := cfg.Peers
	if len(servers) == 0 {
		servers = []string{cfg.Self}
	}
	admin := client.Admin{TLS: peerTLS(cfg)}
	shards, rf, vnodes := cfg.Shards, max(cfg.RF, 1), cfg.VirtualNodes
	rejoin, err := backend.PlanRejoin(&backend.Joining{Join: cfg.Join, DataDir: cfg.DataDir, Self: cfg.Self, Peers: cfg.Peers,
		InMemory: cfg.InMemory, Logger: cfg.Logger}, admin)
	if err != nil {
		return nil, wire.ClusterMap{}, err
	}
	start := rejoin.Map
	if start != nil {
		servers, shards, rf, vnodes = start.Servers, start.Shards, start.RF, start.VirtualNodes
	}
	l, err := shard.New(servers, shards, rf, vnodes)
	if err != nil {
		return nil, wire.ClusterMap{}, fmt.Errorf("kvs: %w", err)
	}
	rc := replica.Config{Layout: l, Map: start, VirtualNodes: vnodes, Self: cfg.Self, DataDir: cfg.DataDir, NoSync: cfg.NoSync, LogFormat: cfg.RaftLog,
		Timing: cfg.Raft, SessionTTL: cfg.SessionTTL, NewStore: store.MakerOfKind(cfg.Store, cfg.account), Dial: raftDialer(cfg, stats),
		PeerStatus: admin.Status, LeaseReads: cfg.ReadMode == ReadLease, Logger: cfg.Logger, LogCache: cfg.logCache,
		RaftRefused: func(error) { stats.BadConns.Add(1) }}
	if rc.LogBytes, err = logbound.ForDir(cfg.DataDir, cfg.RaftLogBytes); err != nil {
		return nil, wire.ClusterMap{}, fmt.Errorf("kvs: %w", err)
	}
	rc.Reborn, rc.HostedElsewhere = rejoin.Reborn, rejoin.HostedElsewhere
	if cfg.plantLease > 0 {
		rc.Timing.LeaseRead, rc.LeaseUnchecked = cfg.plantLease, true
	}
	set, err := replica.Open(rc)
	if err != nil {
		return nil, wire.ClusterMap{}, err
	}
	fwd, err := client.New(client.Config{Servers: servers, VirtualNodes: vnodes,
		RF: l.RF(), Shards: l.Shards(), TLS: peerTLS(cfg)})
	if err != nil {
		_ = set.Close()
		return nil, wire.ClusterMap{}, fmt.Errorf("kvs: forwarding client: %w", err)
	}
	b := backend.NewReplicated(set, apply, stats, fwd, admin, cfg.Logger)
	// KVService.Layout answers a replicated server's current map
	// (Service.currentLayout), not a layout fixed at start.
	return b, wire.ClusterMap{}, nil
}

// peerTLS is the tls.Config this server dials its peers with: its own node
// certificate; nil without an Identity.
func peerTLS(cfg *Config) *tls.Config {
	if cfg.Identity == nil {
		return nil
	}
	return cfg.Identity.ClientConfig()
}

// raftDialer returns how the server opens Raft connections: cfg.DialRaft
// (plain TCP by default), with TLS over it when the server has an
// Identity. The peer's certificate must name the host of the address
// dialled, not of any proxy in between.
func raftDialer(cfg *Config, stats *stats.Stats) transport.DialFunc {
	base := cfg.DialRaft
	if base == nil {
		base = transport.DialTCP
	}
	dial := func(addr string, timeout time.Duration) (net.Conn, error) {
		c, err := base(addr, timeout)
		if err != nil {
			return nil, err
		}
		return &netcount.Conn{Conn: c, In: &stats.BytesIn, Out: &stats.BytesOut}, nil
	}
	tlsCfg := peerTLS(cfg)
	if tlsCfg == nil {
		return dial
	}
	return func(addr string, timeout time.Duration) (net.Conn, error) {
		raw, err := dial(addr, timeout)
		if err != nil {
			return nil, err
		}
		tc := tls.Client(raw, auth.ForAddr(tlsCfg, addr))
		_ = tc.SetDeadline(time.Now().Add(timeout))
		if err := tc.Handshake(); err != nil {
			_ = raw.Close()
			return nil, err
		}
		_ = tc.SetDeadline(time.Time{})
		return tc, nil
	}
}
