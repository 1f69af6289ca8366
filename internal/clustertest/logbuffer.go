package clustertest

import (
	"bytes"
	"strings"
	"sync"
)

// LogBuffer collects what servers or commands write (a logger's lines,
// a command's output) while the test reads it: a bytes.Buffer safe for
// both at once. The zero value is ready to use.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Count returns how many times s occurs in what was written.
func (b *LogBuffer) Count(s string) int { return strings.Count(b.String(), s) }
