package resp

import (
	"bytes"
	"errors"
	"fmt"
)

// Limits bound what one command may make a parser accept. A command past
// any of them is a *ProtocolError. Zero fields take DefaultLimits'.
type Limits struct {
	// MaxArgs is the most elements one command's array may have. Default
	// 1<<20 (Redis's own limit).
	MaxArgs int
	// MaxBulk is the longest bulk string, in bytes. Default 512 MiB
	// (Redis's proto-max-bulk-len).
	MaxBulk int
	// MaxCommand is the most bytes one whole command may take, headers
	// included. Default 1 GiB.
	MaxCommand int
	// MaxInline is the longest inline command line, in bytes. Default 64
	// KiB (Redis's).
	MaxInline int
}

// DefaultLimits returns Redis's own limits.
func DefaultLimits() Limits {
	return Limits{MaxArgs: 1 << 20, MaxBulk: 512 << 20, MaxCommand: 1 << 30, MaxInline: 64 << 10}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxArgs <= 0 {
		l.MaxArgs = d.MaxArgs
	}
	if l.MaxBulk <= 0 {
		l.MaxBulk = d.MaxBulk
	}
	if l.MaxCommand <= 0 {
		l.MaxCommand = d.MaxCommand
	}
	if l.MaxInline <= 0 {
		l.MaxInline = d.MaxInline
	}
	return l
}

// ErrIncomplete says the buffer ends inside a command: read more and
// parse again from the same start.
var ErrIncomplete = errors.New("resp: incomplete command")

// ProtocolError says the bytes are not a RESP command or break a Limit.
// The stream cannot be resynchronized: answer it and close.
type ProtocolError struct {
	Msg string
}

func (e *ProtocolError) Error() string { return "Protocol error: " + e.Msg }

func protoErr(format string, args ...any) error {
	return &ProtocolError{Msg: fmt.Sprintf(format, args...)}
}

// maxHeaderLine is the longest "*<n>\r\n" or "$<n>\r\n" line accepted: a
// 2^63 length fits in 19 digits.
const maxHeaderLine = 24

// ParseCommand parses the command at the start of buf: an array of bulk
// strings, or an inline command (a line of words separated by spaces, as
// a person types into telnet). It appends the arguments to args, aliasing
// buf, and returns them with the number of bytes the command took. An
// empty command (an empty line, "*0") returns no arguments and its size.
//
// When buf ends inside the command, the error is ErrIncomplete and n is
// the least number of bytes the command needs (at least len(buf)+1): the
// caller may grow its buffer to n before parsing again. Any other error is
// a *ProtocolError, and args and n mean nothing.
func ParseCommand(buf []byte, args [][]byte, lim Limits) ([][]byte, int, error) {
	lim = lim.withDefaults()
	if len(buf) == 0 {
		return args, 1, ErrIncomplete
	}
	if buf[0] != '*' {
		return parseInline(buf, args, lim)
	}
	count, pos, err := parseLength(buf, 0, lim.MaxArgs, "multibulk")
	if err != nil {
		return args, pos, err
	}
	for range count {
		if pos >= len(buf) {
			return args, pos + 1, ErrIncomplete
		}
		if buf[pos] != '$' {
			return args, 0, protoErr("expected '$', got %q", buf[pos])
		}
		size, next, err := parseLength(buf, pos, lim.MaxBulk, "bulk")
		if err != nil {
			return args, next, err
		}
		end := next + size + 2
		if end > lim.MaxCommand {
			return args, 0, protoErr("command of more than %d bytes, limit %d", end, lim.MaxCommand)
		}
		if end > len(buf) {
			return args, end, ErrIncomplete
		}
		if buf[end-2] != '\r' || buf[end-1] != '\n' {
			return args, 0, protoErr("bulk string not followed by CRLF")
		}
		args = append(args, buf[next:end-2:end-2])
		pos = end
	}
	return args, pos, nil
}

// parseLength parses the "<kind><n>\r\n" line at buf[at:] and returns n
// and where the line ends. It refuses a negative n or one over limit. On
// ErrIncomplete the returned position is the least size of buf needed.
func parseLength(buf []byte, at int, limit int, what string) (int, int, error) {
	line := buf[at+1:]
	if len(line) > maxHeaderLine {
		line = line[:maxHeaderLine]
	}
	cr := bytes.IndexByte(line, '\r')
	if cr < 0 {
		if len(line) == maxHeaderLine {
			return 0, 0, protoErr("%s length line too long", what)
		}
		return 0, len(buf) + 1, ErrIncomplete
	}
	if at+1+cr+1 >= len(buf) {
		return 0, len(buf) + 1, ErrIncomplete
	}
	if buf[at+1+cr+1] != '\n' {
		return 0, 0, protoErr("%s length not followed by CRLF", what)
	}
	digits := line[:cr]
	if len(digits) == 0 {
		return 0, 0, protoErr("empty %s length", what)
	}
	if digits[0] == '-' {
		return 0, 0, protoErr("invalid %s length %q", what, digits)
	}
	n := 0
	for _, d := range digits {
		if d < '0' || d > '9' {
			return 0, 0, protoErr("invalid %s length %q", what, digits)
		}
		n = n*10 + int(d-'0')
		if n > limit {
			return 0, 0, protoErr("%s length %s over the limit of %d", what, digits, limit)
		}
	}
	return n, at + 1 + cr + 2, nil
}

// parseInline parses one line of words separated by spaces or tabs.
// Control bytes other than those are refused: binary data goes in arrays.
func parseInline(buf []byte, args [][]byte, lim Limits) ([][]byte, int, error) {
	window := buf
	if len(window) > lim.MaxInline {
		window = window[:lim.MaxInline]
	}
	nl := bytes.IndexByte(window, '\n')
	if nl < 0 {
		if len(buf) >= lim.MaxInline {
			return args, 0, protoErr("inline command longer than %d bytes", lim.MaxInline)
		}
		return args, len(buf) + 1, ErrIncomplete
	}
	line := buf[:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	start := -1
	for i, c := range line {
		switch {
		case c == ' ' || c == '\t':
			if start >= 0 {
				args = append(args, line[start:i:i])
				start = -1
			}
		case c < 0x20 || c == 0x7f:
			return args, 0, protoErr("control byte 0x%02x in an inline command", c)
		case start < 0:
			start = i
		}
	}
	if start >= 0 {
		args = append(args, line[start:len(line):len(line)])
	}
	return args, nl + 1, nil
}
