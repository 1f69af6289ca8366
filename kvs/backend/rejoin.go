package backend

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/kvs/replica/mapfile"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// Joining is what a replicated server that starts knows of the cluster
// it may start in (its Config's fields of the same names).
type Joining struct {
	// Join is the member it joins through; "" when not joining.
	Join string
	// DataDir may hold the map an earlier run saved.
	DataDir string
	// Self is its address; Peers the members it was started with.
	Self  string
	Peers []string
	// InMemory says it kept nothing across a restart: it may be reborn.
	InMemory bool
	Logger   *slog.Logger
}

// Rejoin is how a replicated server starts: from the map of the cluster
// it joins or is reborn in, and how to treat its replicas there.
type Rejoin struct {
	// Map is the map it starts from; nil: the initial one, from its
	// Config.
	Map *shard.Map
	// Reborn and HostedElsewhere are replica.Config's: a memory-only
	// server that kept nothing bootstraps the replicas the map places on
	// it anew, except those another member hosts.
	Reborn          bool
	HostedElsewhere map[int]bool
}

// PlanRejoin returns how a replicated server starts, asking the cluster
// through admin: with Join, the map saved in its DataDir or else the one
// the member answers; in memory, the newest map its peers answer.
func PlanRejoin(cfg *Joining, admin client.Admin) (Rejoin, error) {
	start, err := joinMap(cfg, admin)
	if err != nil {
		return Rejoin{}, err
	}
	r := Rejoin{Map: start}
	if reborn := planRebirth(cfg, admin, start); reborn != nil {
		r.Map, r.Reborn, r.HostedElsewhere = reborn.m, reborn.reborn, reborn.elsewhere
	}
	return r, nil
}

// joinTimeout bounds asking a member for the map when joining.
const joinTimeout = 10 * time.Second

// joinMap returns the map a joining server starts from: the one saved in
// its data dir by an earlier run, else the one cfg.Join answers. Nil when
// the server is not joining.
func joinMap(cfg *Joining, admin client.Admin) (*shard.Map, error) {
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
func planRebirth(cfg *Joining, admin client.Admin, joined *shard.Map) *rebirth {
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
func newestPeerMap(cfg *Joining, admin client.Admin) *shard.Map {
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
func hostedElsewhere(cfg *Joining, admin client.Admin, m *shard.Map) map[int]bool {
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
