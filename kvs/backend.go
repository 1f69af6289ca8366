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
	"github.com/batchkv/batchkv/kvs/replica"
	"github.com/batchkv/batchkv/kvs/replica/mapfile"
	"github.com/batchkv/batchkv/kvs/replica/transport"
	"github.com/batchkv/batchkv/kvs/store"
	"github.com/batchkv/batchkv/ring"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// backend serves the ops that reach a Service. The server picks one when it
// starts, from its Config:
//
//   - local: one server that owns every key (memory only);
//   - ring: one of several memory-only servers, each owning the keys that
//     the ring gives it and forwarding the rest (backend_ring.go);
//   - replicated: shards that are Raft groups (backend_replicated.go).
type backend interface {
	// batch serves a BatchOp of at most wire.MaxBatchOps ops: it sets
	// reply.Status, and when that is StatusOK one result per op in
	// reply.Results.
	batch(args *wire.BatchArgs, reply *wire.BatchReply, cl *call)
	// one serves a single valid op of the course skeleton's RPCs.
	one(op wire.Op, cl *call) wire.Result
	// shards reports the replicated shards this server hosts, with their
	// content digests when withDigest; nil when it replicates nothing.
	shards(withDigest bool) []wire.ShardStatus
	// close releases what the backend holds. It is called once.
	close() error
}

// localBackend is a server that owns every key.
type localBackend struct {
	store store.Store
	apply *applier
}

func (b *localBackend) batch(args *wire.BatchArgs, reply *wire.BatchReply, cl *call) {
	reply.Status = wire.StatusOK
	reply.Results = make([]wire.Result, len(args.Ops))
	b.apply.apply(b.store, args.Ops, reply.Results, cl)
}

func (b *localBackend) one(op wire.Op, cl *call) wire.Result {
	res := make([]wire.Result, 1)
	b.apply.apply(b.store, []wire.Op{op}, res, cl)
	return res[0]
}

func (b *localBackend) shards(bool) []wire.ShardStatus { return nil }

func (b *localBackend) close() error { return nil }

// newBackend picks the backend cfg asks for, and the layout that
// KVService.Layout answers with (none for a replicated server, which
// answers its current shard map).
func newBackend(cfg *Config, stats *Stats, apply *applier) (backend, wire.Layout, error) {
	layout := wire.Layout{Servers: cfg.Peers, VirtualNodes: cfg.VirtualNodes}
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
			return nil, wire.Layout{}, fmt.Errorf("kvs: forwarding client: %w", err)
		}
		return &ringBackend{store: cfg.Store, apply: apply, stats: stats, ring: r,
			self: slices.Index(cfg.Peers, cfg.Self), fwd: fwd}, layout, nil
	default:
		if cfg.Self != "" {
			layout.Servers = []string{cfg.Self}
		}
		return &localBackend{store: cfg.Store, apply: apply}, layout, nil
	}
}

// newReplicatedBackend opens this server's replicas of its shards.
func newReplicatedBackend(cfg *Config, apply *applier, stats *Stats) (backend, wire.Layout, error) {
	servers := cfg.Peers
	if len(servers) == 0 {
		servers = []string{cfg.Self}
	}
	admin := client.Admin{TLS: peerTLS(cfg)}
	shards, rf, vnodes := cfg.Shards, max(cfg.Replicas, 1), cfg.VirtualNodes
	start, err := joinMap(cfg, admin)
	if err != nil {
		return nil, wire.Layout{}, err
	}
	reborn := planRebirth(cfg, admin, start)
	if reborn != nil {
		start = reborn.m
	}
	if start != nil {
		servers, shards, rf, vnodes = start.Servers, start.Shards, start.RF, start.VirtualNodes
	}
	l, err := shard.New(servers, shards, rf, vnodes)
	if err != nil {
		return nil, wire.Layout{}, fmt.Errorf("kvs: %w", err)
	}
	rc := replica.Config{Layout: l, Map: start, VirtualNodes: vnodes, Self: cfg.Self, DataDir: cfg.DataDir, NoSync: cfg.NoSync, LogFormat: cfg.RaftLog,
		Timing: cfg.Raft, SessionTTL: cfg.SessionTTL, NewStore: storeMaker(cfg.Store), Dial: raftDialer(cfg, stats),
		PeerStatus: admin.Status, LeaseReads: cfg.ReadMode == ReadLease, RequestTime: stats.requestTime.get, Logger: cfg.Logger}
	if reborn != nil {
		rc.Reborn, rc.HostedElsewhere = reborn.reborn, reborn.elsewhere
	}
	if cfg.plantLease > 0 {
		rc.Timing.LeaseRead, rc.LeaseUnchecked = cfg.plantLease, true
	}
	set, err := replica.Open(rc)
	if err != nil {
		return nil, wire.Layout{}, err
	}
	fwd, err := client.New(client.Config{Servers: servers, VirtualNodes: vnodes,
		Replicas: l.RF(), Shards: l.Shards(), TLS: peerTLS(cfg)})
	if err != nil {
		_ = set.Close()
		return nil, wire.Layout{}, fmt.Errorf("kvs: forwarding client: %w", err)
	}
	b := &replicatedBackend{set: set, apply: apply, stats: stats, fwd: fwd, admin: admin, log: cfg.Logger, stop: make(chan struct{})}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.followMap(b.stop)
	}()
	// KVService.Layout answers a replicated server's current map
	// (Service.currentLayout), not a layout fixed at start.
	return b, wire.Layout{}, nil
}

// joinTimeout bounds asking a member for the map when joining.
const joinTimeout = 10 * time.Second

// joinMap returns the map a joining server starts from: the one saved in
// its data dir by an earlier run, else the one cfg.Join answers. Nil when
// the server is not joining.
func joinMap(cfg *Config, admin client.Admin) (*shard.Map, error) {
	if cfg.Join == "" {
		return nil, nil
	}
	if saved, err := mapfile.Load(cfg.DataDir); err != nil || saved != nil {
		return saved, err
	}
	l, err := admin.Layout(cfg.Join, joinTimeout)
	if err != nil {
		return nil, fmt.Errorf("kvs: joining through %s: %w", cfg.Join, err)
	}
	if l.Epoch == 0 {
		return nil, fmt.Errorf("kvs: joining through %s: it is not a replicated server", cfg.Join)
	}
	m, err := shard.FromWire(l)
	if err != nil {
		return nil, fmt.Errorf("kvs: joining through %s: %w", cfg.Join, err)
	}
	return m, nil
}

// rebornTimeout bounds each question a memory-only server asks its
// peers when it starts.
const rebornTimeout = time.Second

// rebirth is how a memory-only server (InMemory) starts in a cluster
// that is already running: from the cluster's map rather than the
// initial one, and, if that map places replicas on it (it restarted,
// having kept nothing), bootstrapping them anew, empty, except those
// another member still hosts.
type rebirth struct {
	m         *shard.Map
	reborn    bool
	elsewhere map[int]bool // shards (the meta group as m.Shards) another member hosts
}

// planRebirth returns how a memory-only server starts: joined is the map
// -join gave (nil with -peers, whose newest map is asked for). Nil when
// nothing answers, as when the whole cluster starts.
func planRebirth(cfg *Config, admin client.Admin, joined *shard.Map) *rebirth {
	if !cfg.InMemory {
		return nil
	}
	m := joined
	if m == nil {
		m = newestPeerMap(cfg, admin)
	}
	if m == nil {
		return nil
	}
	r := &rebirth{m: m}
	if len(m.Hosted(cfg.Self)) == 0 && !slices.Contains(m.Meta, cfg.Self) {
		return r
	}
	// The map places replicas here: read it at the meta group's leader
	// if one answers (the peers' maps may trail a commit).
	for _, addr := range m.Meta {
		if addr == cfg.Self {
			continue
		}
		rep, err := admin.Membership(addr, wire.MembershipRequest{Op: wire.ReadMap, Shard: wire.MetaShard(m.Shards)}, rebornTimeout)
		if err != nil || rep.NotLeader {
			continue
		}
		if lead, err := shard.FromWire(rep.Map); err == nil && lead.Epoch >= m.Epoch {
			r.m = lead
		}
		break
	}
	r.reborn = true
	r.elsewhere = hostedElsewhere(cfg, admin, r.m)
	cfg.Logger.Warn("this memory-only server kept nothing when it stopped: it serves the replicas the cluster's map places here again, empty",
		"epoch", r.m.Epoch, "shards", r.m.Hosted(cfg.Self), "hosted_elsewhere", len(r.elsewhere))
	return r
}

// newestPeerMap returns the newest map that cfg.Peers answer, or nil.
func newestPeerMap(cfg *Config, admin client.Admin) *shard.Map {
	maps := make(chan *shard.Map, len(cfg.Peers))
	for _, p := range cfg.Peers {
		go func() {
			var m *shard.Map
			if p != cfg.Self {
				if l, err := admin.Layout(p, rebornTimeout); err == nil && l.Epoch > 0 {
					m, _ = shard.FromWire(l) // a map that does not validate is no map
				}
			}
			maps <- m
		}()
	}
	var newest *shard.Map
	for range cfg.Peers {
		if m := <-maps; m != nil && (newest == nil || m.Epoch > newest.Epoch) {
			newest = m
		}
	}
	return newest
}

// hostedElsewhere returns the shards of m (and the meta group, as
// m.Shards) of which a member other than cfg.Self runs a replica: a move
// onto it was under way when this server stopped, and the group there,
// which may list this server, holds the data. A member that does not
// answer is taken to host none.
func hostedElsewhere(cfg *Config, admin client.Admin, m *shard.Map) map[int]bool {
	out := map[int]bool{}
	for _, addr := range m.Servers {
		if addr == cfg.Self {
			continue
		}
		st, err := admin.Status(addr, wire.StatusRequest{}, rebornTimeout)
		if err != nil {
			cfg.Logger.Warn("a member did not answer: if it hosts a shard this server is reborn with, the two diverge", "member", addr, "err", err)
			continue
		}
		for _, s := range st.Shards {
			if slices.Contains(m.Placement[s.Shard], cfg.Self) {
				out[s.Shard] = true
			}
		}
		rep, err := admin.Membership(addr, wire.MembershipRequest{Op: wire.Members, Shard: wire.MetaShard(m.Shards)}, rebornTimeout)
		if err == nil && rep.State != "" && slices.Contains(m.Meta, cfg.Self) {
			out[m.Shards] = true
		}
	}
	return out
}

// storeMaker returns a constructor of empty stores of proto's kind, for
// each shard and each snapshot restore: Config.Store is the kind to use,
// not a store to fill, when replicated. A store of another type (tests
// wrap stores) gets the default kind.
func storeMaker(proto store.Store) func() store.Store {
	if _, ok := proto.(*store.SyncMap); ok {
		return func() store.Store { return store.NewSyncMap() }
	}
	return func() store.Store { return store.NewArena() }
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
func raftDialer(cfg *Config, stats *Stats) transport.DialFunc {
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
