package rawsock

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pair returns the two ends of a loopback TCP connection, the first
// wrapped.
func pair(t *testing.T) (wrapped net.Conn, peer *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	p, ok := <-accepted
	require.True(t, ok)
	t.Cleanup(func() { _ = c.Close(); _ = p.Close() })
	return Wrap(c), p.(*net.TCPConn)
}

func TestWrapTakesTCPOnLinux(t *testing.T) {
	w, _ := pair(t)
	_, unwrapped := w.(*net.TCPConn)
	require.Equal(t, runtime.GOOS != "linux", unwrapped)
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	require.Same(t, a, Wrap(a), "a connection that is not TCP is returned as it is")
}

// TestBytesCrossBothWays: small and large writes, each way, arrive whole
// and in order, through a send buffer far smaller than a write, so that
// a direct write is cut short and waits for the peer to read.
func TestBytesCrossBothWays(t *testing.T) {
	w, p := pair(t)
	require.NoError(t, w.(interface{ SetWriteBuffer(int) error }).SetWriteBuffer(16384))
	require.NoError(t, p.SetReadBuffer(16384))
	var sent bytes.Buffer
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{1, 100, 4096, SmallBytes - 1, SmallBytes, SmallBytes + 1, 200_000}
	for _, n := range sizes {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		sent.Write(b)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(p, int64(sent.Len())))
		got <- b
	}()
	rest := sent.Bytes()
	for _, n := range sizes {
		k, err := w.Write(rest[:n])
		require.NoError(t, err)
		require.Equal(t, n, k)
		rest = rest[n:]
	}
	select {
	case b := <-got:
		require.True(t, bytes.Equal(sent.Bytes(), b), "the peer read %d bytes, not the %d written", len(b), sent.Len())
	case <-time.After(30 * time.Second):
		t.Fatal("the peer did not read everything")
	}

	// The other way: reads into buffers of every size see the same bytes.
	go func() { _, _ = p.Write(sent.Bytes()) }()
	var read bytes.Buffer
	for i := 0; read.Len() < sent.Len(); i++ {
		buf := make([]byte, []int{7, 4096, SmallBytes, SmallBytes + 1}[i%4])
		n, err := w.Read(buf)
		require.NoError(t, err)
		read.Write(buf[:n])
	}
	require.True(t, bytes.Equal(sent.Bytes(), read.Bytes()))
}

func TestEOFAfterPeerCloses(t *testing.T) {
	w, p := pair(t)
	_, err := p.Write([]byte("last"))
	require.NoError(t, err)
	require.NoError(t, p.Close())
	b, err := io.ReadAll(w)
	require.NoError(t, err)
	require.Equal(t, "last", string(b))
	n, err := w.Read(make([]byte, 8))
	require.Zero(t, n)
	require.ErrorIs(t, err, io.EOF)
}

// TestDeadlinesAndCloseEndAWait: a read waiting on a silent peer ends at
// its deadline with a timeout, at once when the deadline is moved into
// the past, and with net.ErrClosed when the connection is closed.
func TestDeadlinesAndCloseEndAWait(t *testing.T) {
	w, _ := pair(t)
	require.NoError(t, w.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	start := time.Now()
	_, err := w.Read(make([]byte, 16))
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout(), "err %v", err)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.GreaterOrEqual(t, time.Since(start), 40*time.Millisecond)

	require.NoError(t, w.SetReadDeadline(time.Time{}))
	done := make(chan error, 1)
	go func() {
		_, err := w.Read(make([]byte, 16))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, w.SetReadDeadline(time.Unix(1, 0)))
	select {
	case err := <-done:
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	case <-time.After(5 * time.Second):
		t.Fatal("a deadline in the past did not end the wait")
	}

	require.NoError(t, w.SetReadDeadline(time.Time{}))
	closeEndsARead(t, w)
}

// closeEndsARead closes w while a Read waits on it, and checks that the
// Read ends with net.ErrClosed.
func closeEndsARead(t *testing.T, w net.Conn) {
	t.Helper()
	done := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		close(started)
		_, err := w.Read(make([]byte, 16))
		done <- err
	}()
	<-started
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, w.Close())
	select {
	case err := <-done:
		require.ErrorIs(t, err, net.ErrClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the wait")
	}
}

// TestWriteToAGonePeerFails: once the peer has closed, with unread bytes
// (so the kernel resets the connection), a write fails with the net
// package's error for it.
func TestWriteToAGonePeerFails(t *testing.T) {
	w, p := pair(t)
	_, err := w.Write([]byte("unread"))
	require.NoError(t, err)
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, p.Close())
	time.Sleep(20 * time.Millisecond)
	var werr error
	for i := 0; i < 100 && werr == nil; i++ {
		_, werr = w.Write([]byte("more"))
		time.Sleep(time.Millisecond)
	}
	require.Error(t, werr)
	var oe *net.OpError
	require.ErrorAs(t, werr, &oe)
	require.Equal(t, "write", oe.Op)
	require.True(t, errors.Is(werr, syscall.ECONNRESET) || errors.Is(werr, syscall.EPIPE), "err %v", werr)
}
