package main

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckExposure(t *testing.T) {
	log := quietLogger()
	cases := []struct {
		name, host string
		insecure   bool
		ok         bool
	}{
		{"loopback address", "127.0.0.1", false, true},
		{"another loopback address", "127.0.0.3", false, true},
		{"localhost", "localhost", false, true},
		{"every interface", "", false, false},
		{"every interface, spelled out", "0.0.0.0", false, false},
		{"a routable address", "10.1.2.3", false, false},
		{"a routable address with -insecure", "10.1.2.3", true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkExposure(c.host, nil, c.insecure, log)
			if c.ok {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, errExposed)
			}
		})
	}
}

// TestRefusesExposedPlaintext: the server will not start on every
// interface without TLS, and the message names the way out.
func TestRefusesExposedPlaintext(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-host", "0.0.0.0", "-port", "0"}, &out, io.Discard)
	require.ErrorIs(t, err, errExposed)
	require.Contains(t, err.Error(), "-insecure")
}

func TestAdminAddrDefaultsToLoopback(t *testing.T) {
	require.Equal(t, "127.0.0.1:9090", adminAddr(":9090"))
	require.Equal(t, "0.0.0.0:9090", adminAddr("0.0.0.0:9090"), "an explicit host is kept")
	require.Equal(t, "node1:9090", adminAddr("node1:9090"))
}
