package resp

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var testLimits = Limits{MaxArgs: 8, MaxBulk: 16, MaxCommand: 128, MaxInline: 32}

func strs(args [][]byte) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out
}

func TestParseCommand(t *testing.T) {
	cases := []struct {
		name string
		in   string
		args []string
		n    int
	}{
		{"array", "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", []string{"GET", "k"}, 20},
		{"array then more", "*1\r\n$4\r\nPING\r\n*1", []string{"PING"}, 14},
		{"empty bulk", "*2\r\n$3\r\nGET\r\n$0\r\n\r\n", []string{"GET", ""}, 19},
		{"binary bulk", "*1\r\n$4\r\n\r\n\x00\xff\r\n", []string{"\r\n\x00\xff"}, 14},
		{"empty array", "*0\r\n", []string{}, 4},
		{"inline", "PING\r\n", []string{"PING"}, 6},
		{"inline LF only", "set k  v\n", []string{"set", "k", "v"}, 9},
		{"inline tabs", "\tget\tk \r\nX", []string{"get", "k"}, 9},
		{"empty line", "\r\n", []string{}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args, n, err := ParseCommand([]byte(tc.in), nil, testLimits)
			require.NoError(t, err)
			require.Equal(t, tc.n, n)
			require.Equal(t, tc.args, strs(args))
		})
	}
}

func TestParseCommandIncomplete(t *testing.T) {
	cases := []struct {
		name string
		in   string
		need int
	}{
		{"nothing", "", 1},
		{"star", "*", 2},
		{"count no LF", "*2\r", 4},
		{"no element", "*2\r\n", 5},
		{"bulk header", "*2\r\n$3", 7},
		{"inside bulk", "*2\r\n$3\r\nGE", 13},
		{"second bulk", "*2\r\n$3\r\nGET\r\n$5\r\nab", 24},
		{"bulk without CRLF yet", "*1\r\n$3\r\nGET", 13},
		{"inline", "PIN", 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, need, err := ParseCommand([]byte(tc.in), nil, testLimits)
			require.ErrorIs(t, err, ErrIncomplete)
			require.Equal(t, tc.need, need)
		})
	}
}

func TestParseCommandProtocolErrors(t *testing.T) {
	cases := []struct {
		name string
		in   string
		msg  string
	}{
		{"negative count", "*-5\r\n", "invalid multibulk length"},
		{"null array", "*-1\r\n", "invalid multibulk length"},
		{"2^40 elements", "*1099511627776\r\n", "over the limit of 8"},
		{"too many args", "*9\r\n", "over the limit of 8"},
		{"2^40 bulk", "*1\r\n$1099511627776\r\n", "over the limit of 16"},
		{"bulk one over", "*1\r\n$17\r\n", "bulk length 17 over the limit of 16"},
		{"negative bulk", "*1\r\n$-1\r\n", "invalid bulk length"},
		{"not a bulk", "*1\r\n:1\r\n", "expected '$'"},
		{"letters in count", "*1x\r\n", "invalid multibulk length"},
		{"empty count", "*\r\n", "empty multibulk length"},
		{"CR without LF", "*1\rx", "not followed by CRLF"},
		{"bulk without CRLF", "*1\r\n$3\r\nGETxx", "not followed by CRLF"},
		{"endless length", "*" + strings.Repeat("1", 30), "too long"},
		{"endless length of zeros", "*" + strings.Repeat("0", 30), "too long"},
		{"command too large", "*8\r\n" + strings.Repeat("$16\r\n0123456789abcdef\r\n", 5) + "$16\r\n", "command of more than"},
		{"endless inline", strings.Repeat("a", 40), "longer than 32"},
		{"binary inline", "GET \x00\r\n", "control byte"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ParseCommand([]byte(tc.in), nil, testLimits)
			var pe *ProtocolError
			require.True(t, errors.As(err, &pe), "got %v", err)
			require.Contains(t, err.Error(), tc.msg)
		})
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	var b []byte
	b = AppendSimple(b, "OK")
	b = AppendError(b, "ERR two\r\nlines")
	b = AppendInt(b, -42)
	b = AppendBulk(b, []byte("a\r\nb"))
	b = AppendNull(b, RESP2)
	b = AppendNull(b, RESP3)
	b = AppendMap(b, 1, RESP3)
	b = AppendBulkString(b, "k")
	b = AppendInt(b, 1)
	b = AppendMap(b, 1, RESP2)
	b = AppendBulkString(b, "k")
	b = AppendBulkString(b, "v")
	r := NewReader(strings.NewReader(string(b)), Limits{})
	want := []string{`+"OK"`, `-"ERR two  lines"`, ":-42", `$"a\r\nb"`, "null", "null",
		`%[$"k" :1]`, `*[$"k" $"v"]`}
	for _, w := range want {
		v, err := r.Read()
		require.NoError(t, err)
		require.Equal(t, w, v.String())
	}
	cmd := AppendCommand(nil, "SET", "k", "")
	args, n, err := ParseCommand(cmd, nil, Limits{})
	require.NoError(t, err)
	require.Equal(t, len(cmd), n)
	require.Equal(t, []string{"SET", "k", ""}, strs(args))
}

func TestReaderRefusesBadReplies(t *testing.T) {
	for _, in := range []string{"$5\r\nab\r\n", "*2000000\r\n", "?\r\n", ":x\r\n", "+OK\n", "$-2\r\n",
		strings.Repeat("*1\r\n", 40) + ":1\r\n"} {
		r := NewReader(strings.NewReader(in), Limits{MaxArgs: 1000})
		_, err := r.Read()
		require.Error(t, err, "%q", in)
	}
}
