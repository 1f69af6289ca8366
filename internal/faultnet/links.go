// Package faultnet puts a toxiproxy proxy, embedded in the calling
// process, on every directed link between n servers, so that tests and the
// chaos harness can slow, cut or silence any server's links:
//
//	l, _ := faultnet.NewLinks(addrs) // after the servers' ports are taken
//	defer l.Close()
//	dial := l.Dialer(i, addrs)       // server i's Raft dialer, through its links
//	l.SetLatency(leader, 100*time.Millisecond)
//	l.Isolate(node, true); l.Mute(node, true); l.Heal(node)
//
// A server run as a process takes the same routes with -raft-via
// (Links.Via). Client traffic never goes through the proxies.
package faultnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Links are the Raft links between n servers: the traffic server i starts
// towards server j goes through a toxiproxy proxy of its own, p[i][j],
// embedded in this process. Faults on a node act on every link that starts
// or ends at it; client traffic does not go through the proxies.
type Links struct {
	p    [][]*toxiproxy.Proxy // p[i][i] is nil
	addr [][]string           // p[i][j]'s listen address, read once: a proxy rewrites its field when restarted
}

// NewLinks starts a proxy for every ordered pair of addrs.
func NewLinks(addrs []string) (*Links, error) {
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	l := &Links{p: make([][]*toxiproxy.Proxy, len(addrs)), addr: make([][]string, len(addrs))}
	for i := range addrs {
		l.p[i] = make([]*toxiproxy.Proxy, len(addrs))
		l.addr[i] = make([]string, len(addrs))
		for j := range addrs {
			if i == j {
				continue
			}
			p := toxiproxy.NewProxy(api, fmt.Sprintf("raft-%d-%d", i, j), "127.0.0.1:0", addrs[j])
			if err := p.Start(); err != nil {
				l.Close()
				return nil, fmt.Errorf("faultnet: proxy %d->%d: %w", i, j, err)
			}
			l.p[i][j] = p
			l.addr[i][j] = p.Listen
		}
	}
	return l, nil
}

// Via returns server i's -raft-via flag value: peer=proxy for every peer.
func (l *Links) Via(i int, addrs []string) string {
	var pairs []string
	for j, a := range addrs {
		if j != i {
			pairs = append(pairs, a+"="+l.addr[i][j])
		}
	}
	return strings.Join(pairs, ",")
}

// Dialer returns server i's Raft dialer: a connection to a peer's address
// goes through the proxy of the link from i to that peer; any other address
// is dialled directly.
func (l *Links) Dialer(i int, addrs []string) func(addr string, timeout time.Duration) (net.Conn, error) {
	return func(addr string, timeout time.Duration) (net.Conn, error) {
		for j, a := range addrs {
			if a == addr && l.addr[i][j] != "" {
				addr = l.addr[i][j]
			}
		}
		return net.DialTimeout("tcp", addr, timeout)
	}
}

// Addr returns the address of the link from i to j.
func (l *Links) Addr(i, j int) string { return l.addr[i][j] }

// each calls f on every link that starts at node (fromNode) or ends at it.
func (l *Links) each(node int, f func(p *toxiproxy.Proxy, fromNode bool) error) error {
	for j := range l.p {
		if j == node {
			continue
		}
		if err := f(l.p[node][j], true); err != nil {
			return err
		}
		if err := f(l.p[j][node], false); err != nil {
			return err
		}
	}
	return nil
}

// SetLatency adds d to every byte sent to or from node over Raft, in both
// directions of every link (a round trip grows by 2d); 0 removes it.
func (l *Links) SetLatency(node int, d time.Duration) error {
	return l.setLatency(node, d, false)
}

// SetEgressLatency adds d to every byte node sends over Raft, and to
// nothing it receives (a round trip grows by d), as netem delay on the
// egress of node's interface does; 0 removes it. It and SetLatency set
// the same fault: each replaces, or lifts, the other's.
func (l *Links) SetEgressLatency(node int, d time.Duration) error {
	return l.setLatency(node, d, true)
}

// setLatency adds d to node's Raft links: to what node sends only when
// egressOnly, else both ways.
func (l *Links) setLatency(node int, d time.Duration, egressOnly bool) error {
	return l.each(node, func(p *toxiproxy.Proxy, fromNode bool) error {
		// On a link node starts, its bytes go upstream; on a link that
		// ends at node, they come back downstream.
		sent := "downstream"
		if fromNode {
			sent = "upstream"
		}
		for _, stream := range []string{"upstream", "downstream"} {
			name := "latency-" + stream
			_ = p.Toxics.RemoveToxic(context.Background(), name)
			if d <= 0 || egressOnly && stream != sent {
				continue
			}
			_, err := p.Toxics.AddToxicJson(strings.NewReader(fmt.Sprintf(
				`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":{"latency":%d}}`,
				name, wideLatencyType, stream, d.Milliseconds())))
			if err != nil {
				return fmt.Errorf("faultnet: latency on %s: %w", p.Name, err)
			}
		}
		return nil
	})
}

// wideLatencyType names wideLatency in toxiproxy's registry.
const wideLatencyType = "wide-latency"

// wideLatency is toxiproxy's latency toxic with a wider queue ahead of
// it. The stock toxic queues at most 1,024 chunks (a chunk is one read of
// the sender's bytes, up to 32 KiB); a link that must hold more than that
// within its delay stops reading, and the sender's bytes wait in its
// socket on top of the delay, so a slow-link run would measure the proxy's
// queue as well as the store. This one queues wideLatencyChunks.
type wideLatency struct{ toxics.LatencyToxic }

// wideLatencyChunks is wideLatency's queue: at 250 ms it carries 131,072
// chunks a second, 32 times what the stock toxic carries.
const wideLatencyChunks = 1 << 15

// GetBufferSize returns the queue ahead of the toxic, in chunks.
func (*wideLatency) GetBufferSize() int { return wideLatencyChunks }

func init() { toxics.Register(wideLatencyType, new(wideLatency)) }

// Isolate cuts every Raft link of node (on) or restores them (off). A cut
// link closes its connections and refuses new ones, as a firewall that
// rejects would, so both ends notice at once (a network that drops
// packets silently is Mute's case).
func (l *Links) Isolate(node int, on bool) error {
	return l.each(node, func(p *toxiproxy.Proxy, _ bool) error { return cut(p, on) })
}

// Mute drops (on) every byte node sends over Raft, while it still hears
// everyone: a one-way partition. Connections stay open; the bytes vanish
// until the fault is lifted (off).
func (l *Links) Mute(node int, on bool) error {
	return l.each(node, func(p *toxiproxy.Proxy, fromNode bool) error {
		// On a link node starts, its bytes go upstream; on a link that
		// ends at node, they come back downstream.
		stream := "downstream"
		if fromNode {
			stream = "upstream"
		}
		return mute(p, stream, on)
	})
}

// CutLink cuts (on) or restores (off) the one link from server from to
// server to, as Isolate does to all of a node's links: its connections
// close and new ones are refused. Cutting a node's links one at a time
// shows what a firewall that takes effect link by link does.
func (l *Links) CutLink(from, to int, on bool) error { return cut(l.p[from][to], on) }

// cut stops (on) or restarts (off) the proxy p.
func cut(p *toxiproxy.Proxy, on bool) error {
	if on {
		p.Stop()
		return nil
	}
	if err := p.Start(); err != nil && !errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
		return fmt.Errorf("faultnet: restart %s: %w", p.Name, err)
	}
	return nil
}

// MuteLink drops (on) the bytes server from sends on the link it opens to
// server to, and only those: to stops hearing from on connections from
// opens, while everything else gets through. off lifts it. It and Mute set
// the same fault on that link: each replaces, or lifts, the other's.
func (l *Links) MuteLink(from, to int, on bool) error {
	return mute(l.p[from][to], "upstream", on)
}

// mute adds (on) or removes (off) a toxic that drops every byte of stream
// on p.
func mute(p *toxiproxy.Proxy, stream string, on bool) error {
	_ = p.Toxics.RemoveToxic(context.Background(), "mute")
	if !on {
		return nil
	}
	_, err := p.Toxics.AddToxicJson(strings.NewReader(fmt.Sprintf(
		`{"name":"mute","type":"timeout","stream":%q,"toxicity":1,"attributes":{"timeout":0}}`, stream)))
	if err != nil {
		return fmt.Errorf("faultnet: mute %s: %w", p.Name, err)
	}
	return nil
}

// Heal removes every fault from node's links.
func (l *Links) Heal(node int) error {
	if err := l.Isolate(node, false); err != nil {
		return err
	}
	if err := l.Mute(node, false); err != nil {
		return err
	}
	return l.SetLatency(node, 0)
}

// Close stops every proxy.
func (l *Links) Close() {
	for i := range l.p {
		for _, p := range l.p[i] {
			if p != nil {
				p.Stop()
			}
		}
	}
}
