package diskspace

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/wire"
)

// newPeerWatch is a Watch with no data dir or poll of its own, for
// feeding it peers' answers by hand.
func newPeerWatch() *Watch {
	return &Watch{log: slog.New(slog.NewTextHandler(io.Discard, nil)), peerFull: map[string]bool{}, peerStores: map[string]peerStores{}}
}

// TestPeersStoresNear: a peer is near from its answer of fifteen
// sixteenths on, stays so until it says less than seven eighths, counts
// only for the replicas asked about, and only for StoresHeardFor after
// its last answer; a peer gone from the members is forgotten.
func TestPeersStoresNear(t *testing.T) {
	const limit = 1 << 20
	d := newPeerWatch()
	at := func(frac float64) *wire.StoreStats {
		return &wire.StoreStats{Bytes: uint64(frac * limit), Limit: limit}
	}
	now := time.Now()
	shard := []string{"self", "a", "b"}

	d.notePeerStores("a", at(0.90), now)
	require.False(t, d.PeersStoresNear(shard), "at 0.90")
	d.notePeerStores("a", at(0.95), now)
	require.True(t, d.PeersStoresNear(shard), "at 0.95")
	require.False(t, d.PeersStoresNear([]string{"self", "b", "c"}), "a replica of another shard")
	d.notePeerStores("a", at(0.90), now)
	require.True(t, d.PeersStoresNear(shard), "back at 0.90: still near until under 7/8")
	d.notePeerStores("a", at(0.80), now)
	require.False(t, d.PeersStoresNear(shard), "at 0.80")

	d.notePeerStores("b", at(1.5), time.Now().Add(-StoresHeardFor))
	require.False(t, d.PeersStoresNear(shard), "b said so too long ago")
	d.notePeerStores("b", nil, time.Now())
	require.False(t, d.PeersStoresNear(shard), "an answer without stores")

	d.notePeerStores("b", at(1.5), time.Now())
	require.True(t, d.PeersStoresNear(shard), "b past its limit")
	d.forgetPeerStores([]string{"a"})
	require.False(t, d.PeersStoresNear(shard), "b is no longer a member")
	require.False(t, d.somePeerStoresNear.Load())

	var nilWatch *Watch
	require.False(t, nilWatch.PeersStoresNear(shard))
}
