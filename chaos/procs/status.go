package procs

import (
	"time"

	"github.com/batchkv/batchkv/wire"
)

// CountReplicas counts the replicas, over every server that answers, for
// which ok holds.
func (c *Servers) CountReplicas(ok func(wire.ShardStatus) bool) int {
	n := 0
	for _, a := range c.Addrs {
		st, err := c.Admin.Status(a, wire.StatusRequest{}, time.Second)
		if err != nil {
			continue
		}
		for _, s := range st.Shards {
			if ok(s) {
				n++
			}
		}
	}
	return n
}

// Redirects sums every running server's count of ops it redirected.
func (c *Servers) Redirects() uint64 {
	var n uint64
	for i, addr := range c.Addrs {
		if c.Pid(i) == 0 {
			continue
		}
		if st, err := c.Admin.Status(addr, wire.StatusRequest{}, 2*time.Second); err == nil && st.Node != nil {
			n += st.Node.Redirects
		}
	}
	return n
}
