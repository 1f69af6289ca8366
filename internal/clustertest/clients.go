package clustertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/membership"
	"github.com/batchkv/batchkv/shard"
	"github.com/batchkv/batchkv/wire"
)

// Admin reaches the servers' admin RPCs, over TLS with the client
// certificate when the cluster has WithTLS.
func (c *Cluster) Admin() client.Admin {
	if c.clientID == nil {
		return client.Admin{}
	}
	return client.Admin{TLS: c.clientID.ClientConfig()}
}

// MembershipAdmin is Admin with the certificate that may change
// membership, when the cluster has WithTLS.
func (c *Cluster) MembershipAdmin() client.Admin {
	if c.adminID == nil {
		return c.Admin()
	}
	return client.Admin{TLS: c.adminID.ClientConfig()}
}

// Client returns a client of the cluster's members, closed when t ends;
// tweak edits its configuration first.
func (c *Cluster) Client(t testing.TB, tweak ...func(*client.Config)) *client.Client {
	cfg := client.Config{Servers: c.Members(), Shards: c.shards, RF: c.rf, MaxBatchOps: 64, TLS: c.Admin().TLS}
	for _, f := range tweak {
		f(&cfg)
	}
	cl, err := client.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// Status asks server i for its view of its shards.
func (c *Cluster) Status(i int) (wire.StatusReply, error) {
	return c.Admin().Status(c.addrs[i], wire.StatusRequest{}, time.Second)
}

// Leader returns the server that leads shard according to its own
// state, or -1.
func (c *Cluster) Leader(shard int) int {
	for i := range c.addrs {
		if c.Server(i) == nil {
			continue
		}
		st, err := c.Status(i)
		if err != nil {
			continue
		}
		for _, s := range st.Shards {
			if s.Shard == shard && s.State == "Leader" {
				return i
			}
		}
	}
	return -1
}

// WaitLeader waits (up to 15s, else it fails the test) until some server
// other than not leads shard, and returns it.
func (c *Cluster) WaitLeader(shard int, not int) int {
	c.t.Helper()
	l := -1
	require.Eventually(c.t, func() bool {
		l = c.Leader(shard)
		return l >= 0 && l != not
	}, 15*time.Second, 50*time.Millisecond, "no leader for shard %d", shard)
	return l
}

// WaitPreferredLeader waits until the preferred replica of sh under
// layout leads it, and returns its index. A new shard's first leader need
// not be the preferred replica, which then takes leadership back: a test
// that writes through one leader from its start begins here, or its
// first ops can meet that hand-over.
func (c *Cluster) WaitPreferredLeader(layout *shard.Layout, sh int) int {
	c.t.Helper()
	x := layout.Preferred(sh)
	require.Eventually(c.t, func() bool { return c.Leader(sh) == x }, 15*time.Second, 50*time.Millisecond,
		"shard %d's preferred replica never led", sh)
	return x
}

// WaitLeaders waits until every shard has a leader.
func (c *Cluster) WaitLeaders() {
	c.t.Helper()
	for sh := range c.shards {
		c.WaitLeader(sh, -1)
	}
}

// Driver returns a membership driver of the cluster, seeded with its
// members and with the certificate that may change membership, that logs
// its steps to t and calls onStep (if set) with each. It is closed when
// t ends.
func (c *Cluster) Driver(t testing.TB, onStep func(line string)) *membership.Driver {
	drv := &membership.Driver{Admin: c.MembershipAdmin(), Seeds: c.Members(), CatchUp: 5 * time.Second, RPCTimeout: 3 * time.Second,
		Progress: func(line string) {
			t.Log(line)
			if onStep != nil {
				onStep(line)
			}
		}}
	t.Cleanup(func() { _ = drv.Close() })
	return drv
}

// Leads reports whether server i leads some shard.
func (c *Cluster) Leads(i int) bool {
	st, err := c.Status(i)
	if err != nil {
		return false
	}
	for _, s := range st.Shards {
		if s.State == "Leader" {
			return true
		}
	}
	return false
}

// CaughtUp reports whether every shard has RF replicas among the
// cluster's servers, all of which have applied the same entries and hold
// the same content. A stopped server makes it false.
func (c *Cluster) CaughtUp() bool {
	ok, _ := c.caughtUp()
	return ok
}

// WaitCaughtUp fails the test unless the cluster is caught up (CaughtUp)
// within d, and then says where each replica stood.
func (c *Cluster) WaitCaughtUp(d time.Duration) {
	c.t.Helper()
	var report string
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		var ok bool
		if ok, report = c.caughtUp(); ok {
			return
		}
	}
	c.t.Fatalf("the replicas did not catch up in %s:\n%s", d, report)
}

// caughtUp is CaughtUp, and a line per replica (or per server that did
// not answer) saying where it stands.
func (c *Cluster) caughtUp() (bool, string) {
	byShard := map[int][]wire.ShardStatus{}
	var report strings.Builder
	for i := range c.addrs {
		st, err := c.Admin().Status(c.addrs[i], wire.StatusRequest{Digest: true}, time.Second)
		if err != nil {
			fmt.Fprintf(&report, "server %d: %v\n", i, err)
			return false, report.String()
		}
		for _, s := range st.Shards {
			byShard[s.Shard] = append(byShard[s.Shard], s)
			fmt.Fprintf(&report, "server %d shard %d: %s term %d last %d commit %d applied %d store at %d keys %d digest %x since contact %s\n",
				i, s.Shard, s.State, s.Term, s.LastIndex, s.Commit, s.Applied, s.StoreIndex, s.Keys, s.Digest, s.SinceContact)
		}
	}
	return replicasAgree(byShard, c.rf, c.shards), report.String()
}

// replicasAgree reports whether there are shards shards, each with rf
// replicas that agree on what they applied.
func replicasAgree(byShard map[int][]wire.ShardStatus, rf, shards int) bool {
	for _, reps := range byShard {
		for _, r := range reps {
			if len(reps) != rf || r.Applied != reps[0].Applied || r.ContentMoving || r.StoreIndex != reps[0].StoreIndex || r.Digest != reps[0].Digest {
				return false
			}
		}
	}
	return len(byShard) == shards
}
