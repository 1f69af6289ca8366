// Package limits holds what any one peer, member or not, can make a
// batchkv server hold, and their defaults (kvs.Config.Limits).
package limits

import (
	"errors"
	"time"
)

// Limits bound what any one peer, member or not, can make a server hold:
// connections, requests in flight, reply bytes waiting to be written, and
// time. The zero value of a field takes its default, which the standard
// run stays well within.
type Limits struct {
	// MaxConns caps open connections in total; one over it is closed at
	// once. Default 4096.
	MaxConns int
	// MaxConnsPerHost caps open connections from one remote IP address.
	// Default 512.
	MaxConnsPerHost int
	// IdleTimeout closes a connection that has had no request in flight
	// and has moved no byte for this long. Default 2 minutes.
	IdleTimeout time.Duration
	// WriteTimeout bounds each write to a connection; a peer that does not
	// read its replies has its connection closed after it. Default 10 s.
	WriteTimeout time.Duration
	// StallTimeout closes, while the server holds more than ReplyBudget
	// of unwritten replies, a connection whose replies have held bytes
	// and written none for this long, so that peers that stop reading
	// cannot keep the others waiting for budget (a peer that reads shows
	// progress every 256 KiB). Default 250 ms.
	StallTimeout time.Duration
	// MaxInFlight caps the requests of one connection being served at
	// once; the connection is not read further until one is answered.
	// Default 256 (the load client keeps 64 per connection).
	MaxInFlight int
	// ReplyBudget caps, server-wide, the bytes of values that replies hold
	// until they are written. A batch that would read values waits while
	// the server is over it. Default 64 MiB: more than a link's
	// bandwidth-delay product needs (10 Gbit/s for 50 ms), and a few times
	// the values of one 8,192-get batch of 1 KiB values. A peer that stops
	// reading while the server is over it is closed (StallTimeout).
	ReplyBudget int64
	// ConnReplyBudget caps the same per connection, so that one peer that
	// does not read its replies mostly stalls only itself (a reply it
	// builds alone, up to a frame, always proceeds). Default 16 MiB.
	ConnReplyBudget int64
	// RequestBudget caps, server-wide, the bytes that requests hold from
	// the moment they are decoded until their replies are written: their
	// ops and keys and values, and the results made for them
	// (kvs.RequestBytes). No connection reads its next request while the
	// server is over it (unless the server holds none), so what the peers
	// send beyond it waits in the network. It must cover what the load
	// keeps in flight for as long as a request takes: at RF=1, where a
	// request waits only for this server, the default is 16 MiB (about 20
	// of the standard load's 8,192-op batches, 50-100 ms of a 2-core
	// server's work; 64 MiB kept the server no busier, and its heap 40 MB
	// larger at 2,000,000 keys); a replicated server's
	// requests also wait for their commit, a round trip to the followers
	// that a slow link lengthens, and its default is
	// ReplicatedRequestBudget. With a MaxMemory, at most a quarter of the
	// heap's share.
	RequestBudget int64
	// ConnRequestBudget caps the same per connection. Default 16 MiB, and
	// RequestBudget on a replicated server.
	ConnRequestBudget int64
	// MaxGobMessage caps one gob message of the HTTP net/rpc path (the
	// course skeleton's Get and Put, the admin RPCs), enforced before it
	// is read. Default 4 MiB: a legacy Put of the largest value fits.
	MaxGobMessage int
	// MaxGobTypes caps the bytes of type definitions one connection of the
	// same path may send: a gob decoder keeps every type it is sent for
	// the connection's life, about five times their bytes. Default 1 MiB;
	// a net/rpc client sends a few hundred bytes of them.
	MaxGobTypes int
	// DigestEvery is how often a caller without a node certificate may ask
	// for content digests (a full scan of every shard). Default 1 s.
	DigestEvery time.Duration
}

// ReplicatedRequestBudget is a replicated server's default
// Limits.RequestBudget: the standard load keeps about 100 MB of requests
// in flight, all on one leader when it leads every shard, for as long as a
// commit takes.
const ReplicatedRequestBudget = 512 << 20

// Default returns the limits a server runs with (a replicated one:
// see ReplicatedRequestBudget).
func Default() Limits {
	return Limits{
		MaxConns:          4096,
		MaxConnsPerHost:   512,
		IdleTimeout:       2 * time.Minute,
		WriteTimeout:      10 * time.Second,
		StallTimeout:      250 * time.Millisecond,
		MaxInFlight:       256,
		ReplyBudget:       64 << 20,
		ConnReplyBudget:   16 << 20,
		RequestBudget:     16 << 20,
		ConnRequestBudget: 16 << 20,
		MaxGobMessage:     4 << 20,
		MaxGobTypes:       1 << 20,
		DigestEvery:       time.Second,
	}
}

// ErrNegative says a field of Limits is below zero.
var ErrNegative = errors.New("kvs: negative limit")

// WithDefaults fills zero fields with Default's and rejects negative
// ones.
func (l Limits) WithDefaults() (Limits, error) {
	d := Default()
	if l.MaxConns < 0 || l.MaxConnsPerHost < 0 || l.IdleTimeout < 0 || l.WriteTimeout < 0 || l.StallTimeout < 0 ||
		l.MaxInFlight < 0 || l.ReplyBudget < 0 || l.ConnReplyBudget < 0 ||
		l.RequestBudget < 0 || l.ConnRequestBudget < 0 || l.MaxGobMessage < 0 || l.MaxGobTypes < 0 || l.DigestEvery < 0 {
		return l, ErrNegative
	}
	fill := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	fill(&l.MaxConns, d.MaxConns)
	fill(&l.MaxConnsPerHost, d.MaxConnsPerHost)
	fill(&l.MaxInFlight, d.MaxInFlight)
	fill(&l.MaxGobMessage, d.MaxGobMessage)
	fill(&l.MaxGobTypes, d.MaxGobTypes)
	for _, f := range []struct{ v, def *time.Duration }{
		{&l.IdleTimeout, &d.IdleTimeout}, {&l.WriteTimeout, &d.WriteTimeout}, {&l.StallTimeout, &d.StallTimeout},
		{&l.DigestEvery, &d.DigestEvery},
	} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	if l.ReplyBudget == 0 {
		l.ReplyBudget = d.ReplyBudget
	}
	if l.ConnReplyBudget == 0 {
		l.ConnReplyBudget = d.ConnReplyBudget
	}
	if l.RequestBudget == 0 {
		l.RequestBudget = d.RequestBudget
	}
	if l.ConnRequestBudget == 0 {
		l.ConnRequestBudget = min(d.ConnRequestBudget, l.RequestBudget)
	}
	return l, nil
}
