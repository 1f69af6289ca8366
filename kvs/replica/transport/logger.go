package transport

import (
	"bytes"
	"context"
	"log/slog"
	"net"

	"github.com/hashicorp/go-hclog"
)

// NewRaftLogger returns the hclog.Logger that hashicorp/raft (its node,
// its log stores and this package's network transport) logs through:
// warnings and errors only, so that benchmarks are not flooded, each line
// passed to the server's own logger rather than straight to stderr.
func NewRaftLogger(log *slog.Logger) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, Output: &slogWriter{log: log},
		DisableTime: true})
}

// slogWriter turns hclog's formatted lines into slog records, at the level
// hclog wrote in brackets, but for a line about a connection this process
// closed itself (net.ErrClosed), which is logged at debug: the transport
// reports every Raft connection that a shutting-down server or a closed
// replica closes as a failed decode, at error level.
type slogWriter struct{ log *slog.Logger }

// closedByUs is net.ErrClosed's text: the connection was closed here.
var closedByUs = []byte(net.ErrClosed.Error())

func (w *slogWriter) Write(p []byte) (int, error) {
	for line := range bytes.Lines(p) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		level := slog.LevelWarn
		if bytes.HasPrefix(line, []byte("[ERROR]")) {
			level = slog.LevelError
		}
		if i := bytes.IndexByte(line, ']'); i >= 0 && line[0] == '[' {
			line = bytes.TrimSpace(line[i+1:])
		}
		if bytes.Contains(line, closedByUs) {
			level = slog.LevelDebug
		}
		w.log.Log(context.Background(), level, string(line))
	}
	return len(p), nil
}
