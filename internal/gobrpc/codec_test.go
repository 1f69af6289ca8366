package gobrpc

import (
	"bytes"
	"encoding/gob"
	"errors"
	"io"
	"net/rpc"
	"strings"
	"testing"
)

// readWriter is a connection that reads in and discards what is written.
type readWriter struct{ io.Reader }

func (readWriter) Write(p []byte) (int, error) { return len(p), nil }
func (readWriter) Close() error                { return nil }

// request returns the gob stream of a net/rpc request header and a body
// holding s.
func request(t *testing.T, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := gob.NewEncoder(&buf)
	if err := enc.Encode(&rpc.Request{ServiceMethod: "KVService.Put", Seq: 1}); err != nil {
		t.Fatal(err)
	}
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCodecBoundsMessages: a request within the limit reads back; one
// whose body announces more than the limit is refused with ErrTooLarge
// before it is read.
func TestCodecBoundsMessages(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    string
		refused bool
	}{{"within", strings.Repeat("v", 1000), false}, {"over", strings.Repeat("v", 5000), true}} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewServerCodec(readWriter{bytes.NewReader(request(t, tc.body))}, 4096)
			var req rpc.Request
			if err := c.ReadRequestHeader(&req); err != nil || req.ServiceMethod != "KVService.Put" {
				t.Fatalf("header: %+v, %v", req, err)
			}
			var body string
			err := c.ReadRequestBody(&body)
			if tc.refused {
				if !errors.Is(err, ErrTooLarge) {
					t.Fatalf("a %d-byte body with a 4096-byte limit: %v, want ErrTooLarge", len(tc.body), err)
				}
				return
			}
			if err != nil || body != tc.body {
				t.Fatalf("body: %d bytes, %v", len(body), err)
			}
		})
	}
}

// TestCodecRefusesMalformedLength: a length byte that announces more
// than 8 bytes of length is refused, not read.
func TestCodecRefusesMalformedLength(t *testing.T) {
	c := NewServerCodec(readWriter{bytes.NewReader([]byte{0xf0, 1, 2})}, 4096)
	var req rpc.Request
	if err := c.ReadRequestHeader(&req); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("malformed length: %v, want ErrTooLarge", err)
	}
}
