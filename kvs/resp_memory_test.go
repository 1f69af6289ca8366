package kvs_test

import (
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// heapInUse returns the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestRESPStalledHeadersCostWhatTheySent: connections that announce a
// 1 MiB value and stall cost the server about what they sent, not what
// they announced (the read buffer grows only as bytes arrive), and
// FrameTimeout closes them. A server that made room for the announced
// value at once held 1 MiB per connection: 64 MiB here.
func TestRESPStalledHeadersCostWhatTheySent(t *testing.T) {
	const conns = 64
	c := newTestCluster(t, 1, clusterOptions{frameTimeout: 3 * time.Second})
	// One full command first, so that the server's own start-up
	// allocations are behind the baseline.
	got, _ := rawRESP(t, c.addrs[0], "PING\r\n", 200*time.Millisecond)
	require.Equal(t, "+PONG\r\n", got)
	before := heapInUse()
	header := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048576\r\n" + strings.Repeat("v", 100)
	var open []net.Conn
	for range conns {
		conn, err := net.Dial("tcp", c.addrs[0])
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		_, err = conn.Write([]byte(header))
		require.NoError(t, err)
		open = append(open, conn)
	}
	time.Sleep(500 * time.Millisecond) // the server reads every header
	held := heapInUse() - min(before, heapInUse())
	perConn := held / conns
	t.Logf("%d stalled connections: %d KiB of heap, %d KiB each", conns, held>>10, perConn>>10)
	require.Less(t, perConn, uint64(256<<10), "each stalled connection holds %d KiB", perConn>>10)
	// FrameTimeout closes them all.
	for _, conn := range open {
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
		buf := make([]byte, 1)
		_, err := conn.Read(buf)
		require.Error(t, err, "a stalled connection was not closed")
	}
}
