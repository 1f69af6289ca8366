package kvs_test

import (
	"bufio"
	"bytes"
	"encoding/gob"
	"errors"
	"io"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/kvs"
)

// gobTypes returns a gob stream of n type definitions (n new struct types,
// each with a field named by 60,000 bytes) and nothing else: a decoder
// keeps every type for its connection's life.
func gobTypes(t *testing.T, n int) []byte {
	var all bytes.Buffer
	enc := gob.NewEncoder(&all)
	for i := range n {
		name := "F" + strings.Repeat("x", 60000) + strconv.Itoa(i)
		typ := reflect.StructOf([]reflect.StructField{{Name: name, Type: reflect.TypeFor[int]()}})
		v := reflect.New(typ)
		v.Elem().Field(0).SetInt(1)
		require.NoError(t, enc.Encode(v.Interface()))
	}
	// Keep the definitions: the messages whose type id (the integer after
	// the length) is negative, which gob's signed integers mark in the
	// low bit.
	var defs []byte
	r := bufio.NewReader(&all)
	for {
		head, n, err := readGobUint(r)
		if err == io.EOF {
			return defs
		}
		require.NoError(t, err)
		msg := make([]byte, n)
		_, err = io.ReadFull(r, msg)
		require.NoError(t, err)
		if _, id, _ := readGobUint(bufio.NewReader(bytes.NewReader(msg))); id&1 == 1 {
			defs = append(append(defs, head...), msg...)
		}
	}
}

// readGobUint reads gob's unsigned integer: its bytes and its value.
func readGobUint(r *bufio.Reader) ([]byte, uint64, error) {
	b, err := r.ReadByte()
	if err != nil || b < 0x80 {
		return []byte{b}, uint64(b), err
	}
	raw, v := []byte{b}, uint64(0)
	for range -int(int8(b)) {
		c, err := r.ReadByte()
		if err != nil {
			return nil, 0, err
		}
		raw, v = append(raw, c), v<<8|uint64(c)
	}
	return raw, v, nil
}

// TestGobTypeDefinitionsAreCapped: a peer on the HTTP net/rpc path sends
// 40 type definitions of 60 KB each, and never a value. Under the
// default cap (1 MiB of definitions a connection) the connection is
// closed; with the cap raised the server reads them all and waits for
// more.
func TestGobTypeDefinitionsAreCapped(t *testing.T) {
	defs := gobTypes(t, 40)
	send := func(cfg kvs.Config) net.Conn {
		_, addr := startServer(t, cfg)
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		_, err = io.WriteString(c, "CONNECT /_goRPC_ HTTP/1.0\n\n")
		require.NoError(t, err)
		line, err := bufio.NewReader(c).ReadString('\n')
		require.NoError(t, err)
		require.Contains(t, line, "200 Connected to Go RPC")
		go func() { _, _ = c.Write(defs) }()
		return c
	}

	c := send(kvs.Config{})
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "%d bytes of definitions, and the connection was not closed: %v", len(defs), err)

	c = send(kvs.Config{Limits: kvs.Limits{MaxGobTypes: 1 << 30}})
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	_, err = c.Read(make([]byte, 1))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "with the cap raised, the connection stays open")
}
