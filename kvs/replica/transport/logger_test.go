package transport

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRaftLoggerGoesThroughSlog: hashicorp/raft's warnings and errors reach
// the server's logger at their level, and its info lines are dropped.
func TestRaftLoggerGoesThroughSlog(t *testing.T) {
	var buf bytes.Buffer
	l := NewRaftLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	l.Info("chatty")
	l.Warn("heartbeat failed", "peer", "b")
	l.Error("disk full")
	out := buf.String()
	require.NotContains(t, out, "chatty")
	require.Contains(t, out, `level=WARN msg="raft: heartbeat failed: peer=b"`)
	require.Contains(t, out, `level=ERROR msg="raft: disk full"`)
}

// TestRaftLoggerQuietsConnectionsClosedHere: the transport's error about a
// connection this process closed (at shutdown) goes to debug, while an
// error about a connection the peer broke stays an error.
func TestRaftLoggerQuietsConnectionsClosedHere(t *testing.T) {
	var buf bytes.Buffer
	l := NewRaftLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	l.Error("failed to decode incoming command", "error", "read tcp 127.0.0.1:1->127.0.0.1:2: use of closed network connection")
	l.Error("failed to decode incoming command", "error", "read tcp 127.0.0.1:1->127.0.0.1:2: connection reset by peer")
	out := buf.String()
	require.Contains(t, out, `level=DEBUG msg="raft: failed to decode incoming command: error=\"read tcp 127.0.0.1:1->127.0.0.1:2: use of closed network connection\""`)
	require.Contains(t, out, `level=ERROR msg="raft: failed to decode incoming command: error=\"read tcp 127.0.0.1:1->127.0.0.1:2: connection reset by peer\""`)
}
