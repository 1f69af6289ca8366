package kvs_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/auth"
	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/clustertest"
	"github.com/batchkv/batchkv/kvs"
	"github.com/batchkv/batchkv/kvs/replica/transport"
	"github.com/batchkv/batchkv/wire"
)

// Outsiders speaking Raft. A cluster of three servers on 127.0.0.1-3,
// one shard on all three, each server with a node certificate naming its
// own address. An outsider that knows the shard's term and log (the test
// tells it) sends the Raft RPCs that owned a plaintext cluster: a
// TimeoutNow to the leader, an AppendEntries with a higher term that
// writes k1=PWNED, an InstallSnapshot of an empty shard, one with a
// garbage configuration, and an AppendEntries with an index gap.

// secCluster is three replicated servers on 127.0.0.1, .2 and .3.
type secCluster struct {
	addrs   []string
	servers []*kvs.Server
	logs    *clustertest.LogBuffer
	admin   client.Admin
	client  *tls.Config // the clients' TLS; nil for a plaintext cluster
}

// certDir makes a CA with node certificates s1..s3 for 127.0.0.1..3, a
// client certificate, and node certificate s9 for 127.0.0.9 (a member of
// the CA that hosts no replica).
func certDir(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "certs")
	require.NoError(t, auth.InitCA(dir))
	for i := 1; i <= 3; i++ {
		require.NoError(t, auth.Issue(dir, fmt.Sprintf("s%d", i), auth.RoleNode, []string{fmt.Sprintf("127.0.0.%d", i)}))
	}
	require.NoError(t, auth.Issue(dir, "s9", auth.RoleNode, []string{"127.0.0.9"}))
	require.NoError(t, auth.Issue(dir, "client", auth.RoleClient, nil))
	return dir
}

func loadID(t *testing.T, dir, name string) *auth.Identity {
	id, err := auth.Load(filepath.Join(dir, auth.CACertFile), filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key"))
	require.NoError(t, err)
	return id
}

// newSecCluster starts the cluster, with TLS from dir unless dir is "".
func newSecCluster(t *testing.T, dir string) *secCluster {
	c := &secCluster{logs: &clustertest.LogBuffer{}}
	var lns []net.Listener
	for i := 1; i <= 3; i++ {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.%d:0", i))
		require.NoError(t, err)
		lns = append(lns, ln)
		c.addrs = append(c.addrs, ln.Addr().String())
	}
	if dir != "" {
		c.client = loadID(t, dir, "client").ClientConfig()
		c.admin = client.Admin{TLS: c.client}
	}
	for i, ln := range lns {
		cfg := kvs.Config{Peers: c.addrs, Self: c.addrs[i], RF: 3, Shards: 1, DataDir: t.TempDir(),
			Logger: slog.New(slog.NewTextHandler(c.logs, nil))}
		if dir != "" {
			cfg.Identity = loadID(t, dir, fmt.Sprintf("s%d", i+1))
		}
		srv, err := kvs.New(cfg)
		require.NoError(t, err)
		go func() { _ = srv.Serve(ln) }()
		c.servers = append(c.servers, srv)
	}
	t.Cleanup(func() {
		for _, s := range c.servers {
			_ = s.Close()
		}
	})
	return c
}

// shard returns every server's view of shard 0; all must answer.
func (c *secCluster) shard(t *testing.T) []wire.ShardStatus {
	var out []wire.ShardStatus
	for _, a := range c.addrs {
		st, err := c.admin.Status(a, wire.StatusRequest{}, 2*time.Second)
		require.NoError(t, err, "server %s must still answer", a)
		require.Len(t, st.Shards, 1)
		out = append(out, st.Shards[0])
	}
	return out
}

// settle waits until one leader is known to all and every log is the
// same, and returns the leader's view.
func (c *secCluster) settle(t *testing.T) wire.ShardStatus {
	var lead wire.ShardStatus
	require.Eventually(t, func() bool {
		var views []wire.ShardStatus
		for _, a := range c.addrs {
			st, err := c.admin.Status(a, wire.StatusRequest{}, time.Second)
			if err != nil || len(st.Shards) != 1 {
				return false
			}
			views = append(views, st.Shards[0])
		}
		for _, v := range views {
			if v.Leader == "" || v.Leader != views[0].Leader || v.LastIndex != views[0].LastIndex || v.Applied != v.LastIndex {
				return false
			}
			if v.State == raft.Leader.String() {
				lead = v
			}
		}
		return lead.State == raft.Leader.String()
	}, 20*time.Second, 50*time.Millisecond)
	return lead
}

func (c *secCluster) kv(t *testing.T) *client.Client {
	cl, err := client.New(client.Config{Servers: c.addrs, Shards: 1, RF: 3, TLS: c.client})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// attackStream is an outsider's raft.StreamLayer: it dials a server with
// the Raft preamble and shard 0, over TLS with tlsCfg when set.
type attackStream struct {
	tls    *tls.Config
	closed chan struct{}
}

func (s *attackStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	var c net.Conn
	var err error
	if s.tls != nil {
		c, err = tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", string(addr), auth.ForAddr(s.tls, string(addr)))
	} else {
		c, err = net.DialTimeout("tcp", string(addr), timeout)
	}
	if err != nil {
		return nil, err
	}
	hdr := binary.LittleEndian.AppendUint32([]byte(transport.Preamble), 0)
	if _, err := c.Write(hdr); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

func (s *attackStream) Accept() (net.Conn, error) { <-s.closed; return nil, net.ErrClosed }
func (s *attackStream) Close() error              { return nil }
func (s *attackStream) Addr() net.Addr            { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 9), Port: 1} }

// attacker sends Raft RPCs as an outsider.
type attacker struct {
	trans *raft.NetworkTransport
	hdr   raft.RPCHeader
}

func newAttacker(t *testing.T, tlsCfg *tls.Config) *attacker {
	stream := &attackStream{tls: tlsCfg, closed: make(chan struct{})}
	trans := raft.NewNetworkTransport(stream, 1, 2*time.Second, io.Discard)
	t.Cleanup(func() { close(stream.closed); _ = trans.Close() })
	return &attacker{trans: trans, hdr: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax,
		ID: []byte("attacker"), Addr: []byte("127.0.0.9:1")}}
}

// pwned is a log entry that sets k1 to PWNED.
func pwned() []byte {
	return wire.AppendBatchArgs(nil, &wire.BatchArgs{Ops: []wire.Op{{Code: wire.OpPut, Key: "k1", Value: "PWNED"}}})
}

func (a *attacker) timeoutNow(addr string) error {
	var resp raft.TimeoutNowResponse
	return a.trans.TimeoutNow(raft.ServerID(addr), raft.ServerAddress(addr), &raft.TimeoutNowRequest{RPCHeader: a.hdr}, &resp)
}

// appendEntries sends one entry at prev+1+gap in term, after prev in
// prevTerm, committed.
func (a *attacker) appendEntries(addr string, term, prev, prevTerm, gap uint64) error {
	var resp raft.AppendEntriesResponse
	idx := prev + 1 + gap
	req := &raft.AppendEntriesRequest{RPCHeader: a.hdr, Term: term, PrevLogEntry: prev + gap, PrevLogTerm: prevTerm,
		Entries: []*raft.Log{{Index: idx, Term: term, Type: raft.LogCommand, Data: pwned()}}, LeaderCommitIndex: idx}
	err := a.trans.AppendEntries(raft.ServerID(addr), raft.ServerAddress(addr), req, &resp)
	if err == nil && !resp.Success {
		return fmt.Errorf("refused by raft: %+v", resp)
	}
	return err
}

func (a *attacker) installSnapshot(addr string, term, index uint64, configuration []byte) error {
	var resp raft.InstallSnapshotResponse
	req := &raft.InstallSnapshotRequest{RPCHeader: a.hdr, SnapshotVersion: raft.SnapshotVersionMax, Term: term,
		LastLogIndex: index, LastLogTerm: term, Configuration: configuration, ConfigurationIndex: index, Size: 0}
	return a.trans.InstallSnapshot(raft.ServerID(addr), raft.ServerAddress(addr), req, &resp, bytes.NewReader(nil))
}

// TestRaftRefusesOutsiders: with TLS, none of the attacks gets through,
// whoever sends it: no certificate, a client certificate, a node
// certificate of another CA, or a node certificate of this CA whose host
// hosts no replica of the shard. The leader and term do not change, k1
// keeps its value, every server stays up, and every attempt is logged.
func TestRaftRefusesOutsiders(t *testing.T) {
	dir := certDir(t)
	c := newSecCluster(t, dir)
	cl := c.kv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, cl.Put(ctx, "k1", "v1"))
	before := c.settle(t)

	other := certDir(t)
	outsiders := []struct {
		name string
		tls  *tls.Config
	}{
		{"plaintext", nil},
		{"TLS without a certificate", &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: loadID(t, dir, "client").CA}},
		{"client certificate", loadID(t, dir, "client").ClientConfig()},
		{"node certificate of another CA", func() *tls.Config {
			cfg := loadID(t, other, "s1").ClientConfig()
			cfg.InsecureSkipVerify = true // the outsider does not care whom it talks to
			return cfg
		}()},
		{"node certificate of no replica's host", loadID(t, dir, "s9").ClientConfig()},
	}
	attempts := 0
	for _, o := range outsiders {
		t.Run(o.name, func(t *testing.T) {
			a := newAttacker(t, o.tls)
			term, last, lastTerm := before.Term, before.LastIndex, before.LastLogTerm
			for _, addr := range c.addrs {
				require.Error(t, a.timeoutNow(addr))
				require.Error(t, a.appendEntries(addr, term+10, last, lastTerm, 0))
				require.Error(t, a.appendEntries(addr, term+10, last, lastTerm, 1000))
				require.Error(t, a.installSnapshot(addr, term+10, last+100, nil))
				require.Error(t, a.installSnapshot(addr, term+10, last+100, []byte("garbage configuration")))
				attempts += 5
			}
		})
	}
	after := c.shard(t)
	for _, s := range after {
		require.Equal(t, before.Term, s.Term, "the term moved")
		require.Equal(t, before.Leader, s.Leader, "the leader changed")
	}
	v, err := cl.Get(ctx, "k1")
	require.NoError(t, err)
	require.Equal(t, "v1", v)
	logged := c.logs.Count("TLS handshake failed") + c.logs.Count("refusing raft connection")
	require.GreaterOrEqual(t, logged, attempts, "every attempt is logged")
	t.Logf("%d attempts, %d refusals logged; term %d, leader %s unchanged", attempts, logged, before.Term, before.Leader)
}

// TestRaftOutsiderOwnsPlaintextCluster shows what the test above guards
// against, and that its attacks work: without TLS the same outsider
// deposes the leader with a TimeoutNow, and writes k1=PWNED on every
// replica with an AppendEntries of a higher term.
func TestRaftOutsiderOwnsPlaintextCluster(t *testing.T) {
	c := newSecCluster(t, "")
	cl := c.kv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, cl.Put(ctx, "k1", "v1"))
	before := c.settle(t)
	a := newAttacker(t, nil)

	require.NoError(t, a.timeoutNow(before.Leader))
	require.Eventually(t, func() bool {
		st, err := c.admin.Status(before.Leader, wire.StatusRequest{}, time.Second)
		return err == nil && st.Shards[0].Term > before.Term
	}, 10*time.Second, 20*time.Millisecond, "the outsider's TimeoutNow started an election")

	now := c.settle(t)
	for _, addr := range c.addrs {
		require.NoError(t, a.appendEntries(addr, now.Term+10, now.LastIndex, now.LastLogTerm, 0))
	}
	require.Eventually(t, func() bool {
		v, err := cl.Get(ctx, "k1")
		return err == nil && v == "PWNED"
	}, 15*time.Second, 50*time.Millisecond, "the outsider's entry was applied")
}
