package procs

import (
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/wire"
)

// TestListensAtFindsTheOwner: the process that listens on a port is
// told apart from one that does not, and a port nobody listens on has
// no owner.
func TestListensAtFindsTheOwner(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	own, err := listensAt(os.Getpid(), addr)
	require.NoError(t, err)
	require.True(t, own, "this process listens on %s", addr)

	other := exec.Command("sleep", "30")
	require.NoError(t, other.Start())
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	own, err = listensAt(other.Process.Pid, addr)
	require.NoError(t, err)
	require.False(t, own, "another process does not own this one's port")

	require.NoError(t, ln.Close())
	own, err = listensAt(os.Getpid(), addr)
	require.NoError(t, err)
	require.False(t, own, "a closed port has no owner")
}

// TestSpareStartRefusesAnotherServer: a spare's port is held until it
// starts; if another server answers there when the spare starts, the
// start fails (the spare cannot listen) instead of counting the other
// server's answers as the spare's.
func TestSpareStartRefusesAnotherServer(t *testing.T) {
	c, err := Start(Config{Bin: serverBin, Dir: t.TempDir(), Servers: 1, Spares: 1, RF: 1, Shards: 1})
	require.NoError(t, err)
	defer c.Close()
	spare := 1
	_, err = net.Listen("tcp", c.Addrs[spare])
	require.Error(t, err, "the spare's port is held until it starts")
	_, err = net.DialTimeout("tcp", c.Addrs[spare], time.Second)
	require.ErrorIs(t, err, syscall.ECONNREFUSED, "a caller is refused there, as by a server that is down")

	// Another test's server takes the port in the moment it is free.
	c.releasePort(spare)
	_, port, err := net.SplitHostPort(c.Addrs[spare])
	require.NoError(t, err)
	other := exec.Command(serverBin, "-host", "127.0.0.1", "-port", port, "-report", "0")
	require.NoError(t, other.Start())
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	require.Eventually(t, func() bool {
		_, err := c.Admin.Status(c.Addrs[spare], wire.StatusRequest{}, 500*time.Millisecond)
		return err == nil
	}, 15*time.Second, 50*time.Millisecond, "the other server answers at %s", c.Addrs[spare])

	err = c.Start(spare)
	require.Error(t, err, "the spare's start is not the other server's")
	require.Contains(t, err.Error(), "exited at start")
}
