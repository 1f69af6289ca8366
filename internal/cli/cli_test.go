package cli_test

import (
	"bytes"
	"flag"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batchkv/batchkv/internal/cli"
)

func TestParse(t *testing.T) {
	for _, arg := range []string{"-h", "-help", "--help"} {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.Int("n", 1, "a `COUNT`")
		var out, errOut bytes.Buffer
		err := cli.Parse(fs, []string{arg}, &out, &errOut)
		require.ErrorIs(t, err, cli.ErrHelpShown, arg)
		require.Equal(t, 0, cli.Exit(err))
		require.Contains(t, out.String(), "-n COUNT")
		require.Empty(t, errOut.String())
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var out, errOut bytes.Buffer
	err := cli.Parse(fs, []string{"-bogus"}, &out, &errOut)
	require.Error(t, err)
	require.Equal(t, 1, cli.Exit(err))
	require.Empty(t, out.String())
	require.Contains(t, errOut.String(), "flag provided but not defined: -bogus")
	require.NoError(t, cli.Parse(fs, nil, &out, &errOut))
}
