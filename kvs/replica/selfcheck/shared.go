package selfcheck

import (
	"sync"
	"time"

	"github.com/batchkv/batchkv/wire"
)

// PeerStatusFunc asks a peer for its status within a timeout (with
// content digests when the request asks for them).
type PeerStatusFunc = func(addr string, req wire.StatusRequest, timeout time.Duration) (wire.StatusReply, error)

// SharedDigests returns peerStatus with its digest replies shared among
// the checks of one server. A digest is a full scan of every shard of the
// peer asked, and a plaintext peer gives a caller one a second, while
// every replica's check asks each of its peers for one: with six shards,
// six asks a second to each peer, all but one refused. With the replies
// shared, a peer is asked at most once per maxAge, one ask at a time (the
// checks that want it meanwhile wait for that one), and a reply younger
// than maxAge is given again. A check compares a peer's digest with its
// own only at the indexes the same reply states, so an older reply
// is never wrong, at worst not comparable yet. Errors are not kept.
func SharedDigests(peerStatus PeerStatusFunc, maxAge time.Duration) PeerStatusFunc {
	type peer struct {
		mu    sync.Mutex
		at    time.Time // guarded by mu: when reply came; zero for none
		reply wire.StatusReply
	}
	var mu sync.Mutex
	peers := map[string]*peer{}
	return func(addr string, req wire.StatusRequest, timeout time.Duration) (wire.StatusReply, error) {
		if !req.Digest {
			return peerStatus(addr, req, timeout)
		}
		mu.Lock()
		p := peers[addr]
		if p == nil {
			p = &peer{}
			peers[addr] = p
		}
		mu.Unlock()
		p.mu.Lock()
		defer p.mu.Unlock()
		if !p.at.IsZero() && time.Since(p.at) < maxAge {
			return p.reply, nil
		}
		reply, err := peerStatus(addr, req, timeout)
		if err != nil {
			return reply, err
		}
		p.at, p.reply = time.Now(), reply
		return reply, nil
	}
}
