package handoff_test

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/internal/handoff"
)

func TestOfferThenAccept(t *testing.T) {
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	l := handoff.New(addr)
	require.Equal(t, addr, l.Addr())
	a, b := net.Pipe()
	defer func() { _ = a.Close(); _ = b.Close() }()
	offered := make(chan bool, 1)
	go func() { offered <- l.Offer(a) }()
	got, err := l.Accept()
	require.NoError(t, err)
	require.Same(t, a, got)
	require.True(t, <-offered)
}

func TestClosedRefusesOffersAndAccepts(t *testing.T) {
	l := handoff.New(nil)
	require.NoError(t, l.Close())
	require.NoError(t, l.Close(), "Close is idempotent")
	a, b := net.Pipe()
	defer func() { _ = a.Close(); _ = b.Close() }()
	require.False(t, l.Offer(a))
	_, err := l.Accept()
	require.ErrorIs(t, err, net.ErrClosed)
}

func TestCloseReleasesBlockedOffer(t *testing.T) {
	l := handoff.New(nil)
	a, b := net.Pipe()
	defer func() { _ = a.Close(); _ = b.Close() }()
	offered := make(chan bool, 1)
	go func() { offered <- l.Offer(a) }()
	require.NoError(t, l.Close())
	require.False(t, <-offered)
}
