package netcount

import (
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestConnCounts(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	var in, out atomic.Uint64
	c := &Conn{Conn: a, In: &in, Out: &out}
	go func() {
		buf := make([]byte, 5)
		_, _ = io.ReadFull(b, buf)
		_, _ = b.Write([]byte("hello, world"))
	}()
	_, err := c.Write([]byte("12345"))
	require.NoError(t, err)
	buf := make([]byte, 12)
	_, err = io.ReadFull(c, buf)
	require.NoError(t, err)
	require.Equal(t, uint64(5), out.Load())
	require.Equal(t, uint64(12), in.Load())
}
