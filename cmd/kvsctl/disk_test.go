package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/wire"
)

// TestDiskCellsShowFullDisks: a full data dir says FULL in top's cell and
// status's table; a server in memory shows no space at all. Stores within
// a sixteenth of their share say NEAR; without a share, "-".
func TestDiskCellsShowFullDisks(t *testing.T) {
	full := &wire.DiskStats{Dir: "/data", Free: 20 << 20, Total: 300 << 20, Full: true, Reserve: 64 << 20}
	ok := &wire.DiskStats{Dir: "/data", Free: 200 << 20, Total: 300 << 20, Reserve: 64 << 20}
	require.Equal(t, "FULL 20M", diskCell(full))
	require.Equal(t, "200M", diskCell(ok))
	require.Equal(t, "-", diskCell(nil))
	var out bytes.Buffer
	near := &wire.StoreStats{Bytes: 340 << 20, Limit: 352 << 20}
	room := &wire.StoreStats{Bytes: 100 << 20, Limit: 352 << 20}
	require.NoError(t, writeDisks(&out, []serverDisk{{"a:1", full, near}, {"b:1", ok, room}, {"c:1", nil, nil}}))
	lines := bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n"))
	require.Len(t, lines, 4)
	require.Regexp(t, `^a:1 +/data +20 +300 +FULL \(64\) +340 \(352\) NEAR$`, string(lines[1]))
	require.Regexp(t, `^b:1 +/data +200 +300 +no \(64\) +100 \(352\)$`, string(lines[2]))
	require.Regexp(t, `^c:1 +\(in memory\) .* -$`, string(lines[3]))
}
