package selfcheck

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batchkv/batchkv/wire"
)

// TestSharedDigests: twelve checks that ask one peer for a digest at once
// cause one ask; a reply older than maxAge is asked again; asks without a
// digest, and other peers, are not shared; an error is not kept.
func TestSharedDigests(t *testing.T) {
	var asks, digestAsks atomic.Int64
	fail := atomic.Bool{}
	peer := func(addr string, req wire.StatusRequest, _ time.Duration) (wire.StatusReply, error) {
		asks.Add(1)
		if req.Digest {
			digestAsks.Add(1)
			time.Sleep(20 * time.Millisecond) // a full scan
		}
		if fail.Load() {
			return wire.StatusReply{}, errors.New("refused")
		}
		return wire.StatusReply{Shards: []wire.ShardStatus{{Shard: 1, Applied: uint64(asks.Load())}}}, nil
	}
	shared := SharedDigests(peer, 200*time.Millisecond)
	askAll := func(addr string, req wire.StatusRequest) []wire.StatusReply {
		var wg sync.WaitGroup
		replies := make([]wire.StatusReply, 12)
		for i := range replies {
			wg.Go(func() {
				r, err := shared(addr, req, time.Second)
				if err == nil {
					replies[i] = r
				}
			})
		}
		wg.Wait()
		return replies
	}

	replies := askAll("a", wire.StatusRequest{Digest: true})
	if n := digestAsks.Load(); n != 1 {
		t.Fatalf("12 checks at once asked the peer %d times, want 1", n)
	}
	for _, r := range replies {
		if len(r.Shards) != 1 || r.Shards[0].Applied != replies[0].Shards[0].Applied {
			t.Fatalf("a check got another reply: %+v against %+v", r, replies[0])
		}
	}
	askAll("b", wire.StatusRequest{Digest: true})
	if n := digestAsks.Load(); n != 2 {
		t.Fatalf("another peer: %d digest asks in all, want 2", n)
	}
	before := asks.Load()
	askAll("a", wire.StatusRequest{})
	if n := asks.Load() - before; n != 12 {
		t.Fatalf("12 asks without a digest made %d, want 12", n)
	}
	time.Sleep(250 * time.Millisecond)
	askAll("a", wire.StatusRequest{Digest: true})
	if n := digestAsks.Load(); n != 3 {
		t.Fatalf("after maxAge: %d digest asks in all, want 3", n)
	}
	time.Sleep(250 * time.Millisecond)
	fail.Store(true)
	askAll("a", wire.StatusRequest{Digest: true})
	if n := digestAsks.Load(); n != 3+12 {
		t.Fatalf("refused asks: %d digest asks in all, want 15 (an error is not kept)", n)
	}
}
