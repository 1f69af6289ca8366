package sniff

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSniff: the bytes that open a connection name its protocol, and no
// byte past them is read.
func TestSniff(t *testing.T) {
	cases := []struct {
		name, in, head string
		resp           bool
	}{
		{"resp array", "*1\r\n$4\r\nPING\r\n", "*", true},
		{"short inline", "PING\r\nrest", "PING\r\n", true},
		{"inline get", "GET key1\r\n", "GET key1", true},
		{"inline set", "set k v\n", "set k v\n", true},
		{"net/rpc over HTTP", "CONNECT /_goRPC_ HTTP/1.0\r\n\r\n", "CONNECT ", false},
		{"HTTP GET", "GET /metrics HTTP/1.1\r\n", "GET /met", false},
		{"HTTP OPTIONS *", "OPTIONS * HTTP/1.1\r\n", "OPTIONS ", false},
		{"binary preamble", "BATCHKV1\x00\x00", "BATCHKV1", false},
		{"garbage", "\x00\x01\x02\x03\x04\x05\x06\x07\x08", "\x00\x01\x02\x03\x04\x05\x06\x07", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client, server := net.Pipe()
			defer client.Close()
			defer server.Close()
			go func() { _, _ = client.Write([]byte(tc.in)) }()
			head, err := Head(server)
			require.NoError(t, err)
			require.Equal(t, tc.head, string(head))
			if tc.name != "binary preamble" { // matched before isRESP is asked
				require.Equal(t, tc.resp, IsRESP(head))
			}
		})
	}
}
