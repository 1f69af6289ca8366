package gobrpc

import (
	"bufio"
	"bytes"
	"encoding/gob"
	"errors"
	"io"
	"net/rpc"
	"reflect"
	"strconv"
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
			c := NewServerCodec(readWriter{bytes.NewReader(request(t, tc.body))}, 4096, 4096)
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
	c := NewServerCodec(readWriter{bytes.NewReader([]byte{0xf0, 1, 2})}, 4096, 4096)
	var req rpc.Request
	if err := c.ReadRequestHeader(&req); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("malformed length: %v, want ErrTooLarge", err)
	}
}

// typeDefinitions returns the gob stream of n values of n new struct
// types, each with a field named by nameLen bytes: n type definitions
// and n values.
func typeDefinitions(t *testing.T, n, nameLen int) []byte {
	var buf bytes.Buffer
	enc := gob.NewEncoder(&buf)
	for i := range n {
		name := "F" + strings.Repeat("x", nameLen-1-len(strconv.Itoa(i))) + strconv.Itoa(i)
		typ := reflect.StructOf([]reflect.StructField{{Name: name, Type: reflect.TypeFor[int]()}})
		v := reflect.New(typ)
		v.Elem().Field(0).SetInt(1)
		if err := enc.Encode(v.Interface()); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// TestCodecBoundsTypeDefinitions: a decoder keeps every type a
// connection defines, so their bytes are capped per connection. An honest
// request's few definitions pass a cap of 1 KiB; 20 types of 1,000-byte
// field names are refused once past 10 KiB, and read whole under a cap of
// 1 MiB.
func TestCodecBoundsTypeDefinitions(t *testing.T) {
	c := NewServerCodec(readWriter{bytes.NewReader(request(t, "v"))}, 4096, 1024)
	var req rpc.Request
	if err := c.ReadRequestHeader(&req); err != nil {
		t.Fatalf("an honest request under a 1 KiB cap: %v", err)
	}
	var body string
	if err := c.ReadRequestBody(&body); err != nil || body != "v" {
		t.Fatalf("body: %q, %v", body, err)
	}

	stream := typeDefinitions(t, 20, 1000)
	for _, tc := range []struct {
		cap     int
		refused bool
	}{{10 << 10, true}, {1 << 20, false}} {
		dec := gob.NewDecoder(&limitReader{r: bufio.NewReader(bytes.NewReader(stream)), max: 4096, typesLeft: uint64(tc.cap)})
		read, err := 0, error(nil)
		for ; read < 20; read++ {
			if err = dec.DecodeValue(reflect.Value{}); err != nil { // the value is discarded
				break
			}
		}
		if tc.refused != errors.Is(err, ErrTooLarge) {
			t.Fatalf("cap %d: %d values read, then %v", tc.cap, read, err)
		}
		if tc.refused && read > 10 {
			t.Fatalf("cap %d: %d values of 1,000-byte types read", tc.cap, read)
		}
	}
}
