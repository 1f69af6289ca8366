package faultnet

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// greeter listens on loopback; each connection is greeted with "hi\n" and
// then every line is echoed.
func greeter(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				if _, err := io.WriteString(c, "hi\n"); err != nil {
					return
				}
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := io.WriteString(c, line); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func newTestLinks(t *testing.T) *Links {
	t.Helper()
	l, err := NewLinks([]string{greeter(t), greeter(t)})
	require.NoError(t, err)
	t.Cleanup(l.Close)
	return l
}

// dialGreeted dials through p(i, j) and reads the greeting.
func dialGreeted(t *testing.T, l *Links, i, j int) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", l.Addr(i, j), time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	r := bufio.NewReader(c)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "hi\n", line)
	return c, r
}

// roundTrip times one echoed line.
func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader) time.Duration {
	t.Helper()
	start := time.Now()
	_, err := io.WriteString(c, "ping\n")
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ping\n", line)
	return time.Since(start)
}

// TestLatencyDelaysBothWays: 100ms on node 0's links makes a round trip
// through either of its links take at least 200ms, and removing it
// brings the round trip back down.
func TestLatencyDelaysBothWays(t *testing.T) {
	l := newTestLinks(t)
	c, r := dialGreeted(t, l, 0, 1)
	fast := roundTrip(t, c, r)
	require.NoError(t, l.SetLatency(0, 100*time.Millisecond))
	for _, link := range [][2]int{{0, 1}, {1, 0}} {
		c, r := dialGreeted(t, l, link[0], link[1])
		slow := roundTrip(t, c, r)
		require.GreaterOrEqual(t, slow, 200*time.Millisecond, "link %v", link)
		require.Less(t, slow, 2*time.Second)
	}
	require.NoError(t, l.SetLatency(0, 0))
	c, r = dialGreeted(t, l, 0, 1)
	require.Less(t, roundTrip(t, c, r), 100*time.Millisecond+fast)
}

// TestEgressLatencyDelaysOnlyWhatTheNodeSends: 150ms on what node 0
// sends makes a round trip through either of its links take 150ms, once:
// its requests on the link it opens are late, and so are its answers on
// the link its peer opens, while what it receives is not.
func TestEgressLatencyDelaysOnlyWhatTheNodeSends(t *testing.T) {
	l := newTestLinks(t)
	require.NoError(t, l.SetEgressLatency(0, 150*time.Millisecond))
	for _, link := range [][2]int{{0, 1}, {1, 0}} {
		c, r := dialGreeted(t, l, link[0], link[1])
		rtt := roundTrip(t, c, r)
		require.GreaterOrEqual(t, rtt, 150*time.Millisecond, "link %v", link)
		require.Less(t, rtt, 290*time.Millisecond, "link %v: delayed both ways", link)
	}
	require.NoError(t, l.SetLatency(0, 0))
	c, r := dialGreeted(t, l, 0, 1)
	require.Less(t, roundTrip(t, c, r), 100*time.Millisecond)
}

// TestIsolateClosesConnections: cutting node 0 off ends its open
// connections at once (the peer reads EOF or a reset, not silence) and
// refuses new ones; healing lets connections through again.
func TestIsolateClosesConnections(t *testing.T) {
	l := newTestLinks(t)
	c, r := dialGreeted(t, l, 1, 0)
	require.NoError(t, l.Isolate(0, true))
	require.NoError(t, c.SetReadDeadline(time.Now().Add(2*time.Second)))
	start := time.Now()
	_, err := r.ReadString('\n')
	require.Error(t, err)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the connection went silent instead of closing: %v", err)
	require.Less(t, time.Since(start), time.Second)
	_, err = net.DialTimeout("tcp", l.Addr(0, 1), time.Second)
	require.True(t, errors.Is(err, syscall.ECONNREFUSED), "dial to a cut link: %v", err)
	require.NoError(t, l.Isolate(0, false))
	c, r = dialGreeted(t, l, 0, 1)
	roundTrip(t, c, r)
}

// TestMuteDropsOnlyWhatTheNodeSends: with node 0 muted, it still hears
// its peer (the greeting arrives on 0's own link), but what it sends is
// lost: its echo request on that link, and its greeting on the link its
// peer opened. The connections stay open.
func TestMuteDropsOnlyWhatTheNodeSends(t *testing.T) {
	l := newTestLinks(t)
	require.NoError(t, l.Mute(0, true))
	c, r := dialGreeted(t, l, 0, 1) // the peer's greeting reaches node 0
	_, err := io.WriteString(c, "ping\n")
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(500*time.Millisecond)))
	_, err = r.ReadString('\n')
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "node 0's bytes got through")

	c2, err := net.DialTimeout("tcp", l.Addr(1, 0), time.Second)
	require.NoError(t, err)
	defer func() { _ = c2.Close() }()
	require.NoError(t, c2.SetReadDeadline(time.Now().Add(500*time.Millisecond)))
	_, err = bufio.NewReader(c2).ReadString('\n')
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "node 0's greeting got through")

	require.NoError(t, l.Mute(0, false))
	c, r = dialGreeted(t, l, 0, 1)
	roundTrip(t, c, r)
}

// TestCutLinkCutsOneDirection: cutting the link from 0 to 1 refuses new
// connections on it and leaves the link from 1 to 0 working; restoring
// it lets connections through again.
func TestCutLinkCutsOneDirection(t *testing.T) {
	l := newTestLinks(t)
	require.NoError(t, l.CutLink(0, 1, true))
	_, err := net.DialTimeout("tcp", l.Addr(0, 1), time.Second)
	require.True(t, errors.Is(err, syscall.ECONNREFUSED), "dial to a cut link: %v", err)
	c, r := dialGreeted(t, l, 1, 0)
	roundTrip(t, c, r)
	require.NoError(t, l.CutLink(0, 1, false))
	c, r = dialGreeted(t, l, 0, 1)
	roundTrip(t, c, r)
}

// TestMuteLinkDropsOnlyThatLink: with the link from 0 to 1 muted, what 0
// sends on it is lost, while the greeting that comes back on it and
// everything on the link from 1 to 0 gets through.
func TestMuteLinkDropsOnlyThatLink(t *testing.T) {
	l := newTestLinks(t)
	require.NoError(t, l.MuteLink(0, 1, true))
	c, r := dialGreeted(t, l, 0, 1)
	_, err := io.WriteString(c, "ping\n")
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(500*time.Millisecond)))
	_, err = r.ReadString('\n')
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "node 0's bytes got through the muted link")
	c2, r2 := dialGreeted(t, l, 1, 0)
	roundTrip(t, c2, r2)
	require.NoError(t, l.MuteLink(0, 1, false))
	c, r = dialGreeted(t, l, 0, 1)
	roundTrip(t, c, r)
}
