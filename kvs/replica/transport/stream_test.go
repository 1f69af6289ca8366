package transport

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStreamNotesWhenAPeerAnswers: a peer dialled but silent has not been
// heard from; once a byte from it is read, it has, just now.
func TestStreamNotesWhenAPeerAnswers(t *testing.T) {
	mine, theirs := net.Pipe()
	defer func() { _ = mine.Close(); _ = theirs.Close() }()
	go func() { _, _ = io.ReadFull(theirs, make([]byte, len(Preamble)+4)) }()
	s := NewStream(3, "127.0.0.1:1", func(string, time.Duration) (net.Conn, error) { return mine, nil })
	c, err := s.Dial("127.0.0.1:2", time.Second)
	require.NoError(t, err)
	_, heard := s.HeardFrom("127.0.0.1:2")
	require.False(t, heard, "heard from a peer that sent nothing")

	go func() { _, _ = theirs.Write([]byte("x")) }()
	_, err = io.ReadFull(c, make([]byte, 1))
	require.NoError(t, err)
	at, heard := s.HeardFrom("127.0.0.1:2")
	require.True(t, heard)
	require.WithinDuration(t, time.Now(), at, time.Second)
	_, heard = s.HeardFrom("127.0.0.1:9")
	require.False(t, heard, "heard from a peer never dialled")
}
