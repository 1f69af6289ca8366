package wire_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/wire"
)

// TestStoreStatsNearLimit: stores are near their limit from fifteen
// sixteenths of it on, past it too (a peer may report any count, the
// largest among them), and well within it under seven eighths; no limit,
// or no stats (an older server), is never near.
func TestStoreStatsNearLimit(t *testing.T) {
	const limit = 1 << 30
	for _, tc := range []struct {
		st         *wire.StoreStats
		near, well bool
	}{
		{nil, false, true},
		{&wire.StoreStats{Bytes: 5 << 30}, false, true}, // no limit
		{&wire.StoreStats{Bytes: 0, Limit: limit}, false, true},
		{&wire.StoreStats{Bytes: limit - limit/8 - 1, Limit: limit}, false, true},
		{&wire.StoreStats{Bytes: limit - limit/8, Limit: limit}, false, false},
		{&wire.StoreStats{Bytes: limit - limit/16, Limit: limit}, false, false},
		{&wire.StoreStats{Bytes: limit - limit/16 + 1, Limit: limit}, true, false},
		{&wire.StoreStats{Bytes: 2 * limit, Limit: limit}, true, false},
		{&wire.StoreStats{Bytes: math.MaxUint64, Limit: limit}, true, false},
		{&wire.StoreStats{Bytes: math.MaxUint64, Limit: math.MaxUint64}, true, false},
	} {
		require.Equal(t, tc.near, tc.st.NearLimit(), "%+v", tc.st)
		require.Equal(t, tc.well, tc.st.WellWithinLimit(), "%+v", tc.st)
	}
}
