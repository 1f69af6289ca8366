package replica

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
	l := newRaftLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	l.Info("chatty")
	l.Warn("heartbeat failed", "peer", "b")
	l.Error("disk full")
	out := buf.String()
	require.NotContains(t, out, "chatty")
	require.Contains(t, out, `level=WARN msg="raft: heartbeat failed: peer=b"`)
	require.Contains(t, out, `level=ERROR msg="raft: disk full"`)
}
