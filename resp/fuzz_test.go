package resp

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

type parseFunc func(buf []byte, args [][]byte, lim Limits) ([][]byte, int, error)

// checkEncoded checks parse against one command encoded as a client
// encodes it: the whole parses back to the same arguments and size, and
// every proper prefix is incomplete and asks for more than it has but no
// more than the whole.
func checkEncoded(parse parseFunc, args []string, lim Limits) error {
	cmd := AppendCommand(nil, args...)
	got, n, err := parse(cmd, nil, lim)
	if err != nil {
		return fmt.Errorf("whole command: %w", err)
	}
	if n != len(cmd) || len(got) != len(args) {
		return fmt.Errorf("whole command: %d args in %d bytes, want %d in %d", len(got), n, len(args), len(cmd))
	}
	for i := range args {
		if string(got[i]) != args[i] {
			return fmt.Errorf("arg %d: %q, want %q", i, got[i], args[i])
		}
	}
	for cut := range len(cmd) {
		_, need, err := parse(cmd[:cut], nil, lim)
		if !errors.Is(err, ErrIncomplete) {
			return fmt.Errorf("prefix of %d bytes: %v, want incomplete", cut, err)
		}
		if need <= cut || need > len(cmd) {
			return fmt.Errorf("prefix of %d bytes asks for %d, whole is %d", cut, need, len(cmd))
		}
	}
	return nil
}

// checkRaw checks what parse makes of arbitrary bytes: no panic, a size
// within the buffer, arguments within the limits and inside the buffer.
func checkRaw(parse parseFunc, buf []byte, lim Limits) error {
	args, n, err := parse(buf, nil, lim)
	var pe *ProtocolError
	switch {
	case errors.As(err, &pe):
		return nil
	case errors.Is(err, ErrIncomplete):
		if n <= len(buf) {
			return fmt.Errorf("incomplete asks for %d bytes of %d held", n, len(buf))
		}
		return nil
	case err != nil:
		return err
	}
	if n <= 0 || n > len(buf) || len(args) > lim.MaxArgs {
		return fmt.Errorf("%d args in %d bytes of %d", len(args), n, len(buf))
	}
	for _, a := range args {
		if len(a) > lim.MaxBulk {
			return fmt.Errorf("arg of %d bytes over the limit", len(a))
		}
		if len(a) > 0 && !bytes.Contains(buf[:n], a) {
			return fmt.Errorf("arg %q not in the command", a)
		}
	}
	return nil
}

// splitArgs makes a command's arguments from fuzz input: bytes split at
// 0xff.
func splitArgs(data []byte) []string {
	var out []string
	for a := range bytes.SplitSeq(data, []byte{0xff}) {
		out = append(out, string(a))
	}
	return out
}

var fuzzLimits = Limits{MaxArgs: 64, MaxBulk: 256, MaxCommand: 4096, MaxInline: 128}

func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{
		"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "PING\r\n", "*-5\r\n", "*1099511627776\r\n",
		"*1\r\n$1099511627776\r\n", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\n", "set k v\n",
		"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n", "\r\n", "*0\r\n", "GET \x00\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := checkRaw(ParseCommand, data, fuzzLimits); err != nil {
			t.Fatalf("%q: %v", data, err)
		}
		args := splitArgs(data)
		if len(args) <= fuzzLimits.MaxArgs && len(data) <= fuzzLimits.MaxBulk {
			if err := checkEncoded(ParseCommand, args, fuzzLimits); err != nil {
				t.Fatalf("%q: %v", args, err)
			}
		}
	})
}

// TestCheckersCatchPlantedBugs: the fuzz checks fail on parsers with
// planted bugs.
func TestCheckersCatchPlantedBugs(t *testing.T) {
	// Asks for one byte too many inside a bulk string: a server that
	// trusted it would wait for a byte the client never sends.
	overNeed := func(buf []byte, args [][]byte, lim Limits) ([][]byte, int, error) {
		args, n, err := ParseCommand(buf, args, lim)
		if errors.Is(err, ErrIncomplete) && n > len(buf)+1 {
			n++
		}
		return args, n, err
	}
	require.Error(t, checkEncoded(overNeed, []string{"SET", "key", "value"}, fuzzLimits))
	// Drops an argument's last byte.
	truncating := func(buf []byte, args [][]byte, lim Limits) ([][]byte, int, error) {
		args, n, err := ParseCommand(buf, args, lim)
		if err == nil && len(args) > 0 && len(args[0]) > 0 {
			args[0] = args[0][:len(args[0])-1]
		}
		return args, n, err
	}
	require.Error(t, checkEncoded(truncating, []string{"GET", "k"}, fuzzLimits))
	// Ignores the bulk limit.
	unlimited := func(buf []byte, args [][]byte, lim Limits) ([][]byte, int, error) {
		lim.MaxBulk = 1 << 20
		return ParseCommand(buf, args, lim)
	}
	big := AppendCommand(nil, string(make([]byte, fuzzLimits.MaxBulk+1)))
	require.NoError(t, checkRaw(ParseCommand, big, fuzzLimits))
	require.Error(t, checkRaw(unlimited, big, fuzzLimits))
}
