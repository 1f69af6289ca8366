package membership

import (
	"maps"
	"slices"
	"time"

	"github.com/batchkv/batchkv/shard"
)

// ProbeWait bounds how long a command waits for members to answer before
// it plans (or the Driver's RPCTimeout, if shorter): a member that has
// not answered by then is down for that plan. A stopped server refuses
// at once; one cut off by a partition would otherwise hold the command
// for the whole RPC timeout.
const ProbeWait = 3 * time.Second

// downMembers asks every member of m for its map at once and returns the
// ones that did not answer within ProbeWait, saying which: the planners
// move nothing to them, and take from them first.
func (c *Driver) downMembers(m *shard.Map) map[string]bool {
	down, why := c.probe(m.Servers)
	for _, addr := range slices.Sorted(maps.Keys(down)) {
		if err := why[addr]; err != nil {
			c.say("%s does not answer (%v): no replica or leadership goes to it", addr, err)
		} else {
			c.say("%s did not answer within %v: no replica or leadership goes to it", addr, c.probeWait())
		}
	}
	return down
}

// probeWait is how long probe waits: ProbeWait, or the RPC timeout if
// shorter.
func (c *Driver) probeWait() time.Duration { return min(ProbeWait, c.timeout()) }

// probe asks each of addrs for its map at once and returns the ones that
// did not answer within probeWait, with the errors of those that failed.
// A probe still under way when the wait ends finishes in the background
// (Close waits for it).
func (c *Driver) probe(addrs []string) (down map[string]bool, why map[string]error) {
	type answer struct {
		addr string
		err  error
	}
	answers := make(chan answer, len(addrs))
	for _, addr := range addrs {
		c.background(func() {
			_, err := c.layout(addr)
			answers <- answer{addr, err}
		})
	}
	down = make(map[string]bool, len(addrs))
	for _, addr := range addrs {
		down[addr] = true
	}
	why = map[string]error{}
	wait := time.NewTimer(c.probeWait())
	defer wait.Stop()
probing:
	for range addrs {
		select {
		case a := <-answers:
			if a.err == nil {
				delete(down, a.addr)
			} else {
				why[a.addr] = a.err
			}
		case <-wait.C:
			break probing
		}
	}
	return down, why
}
