// Package cli holds what every command does the same way: parsing its
// flags so that -h and -help print the usage on stdout and exit 0, while
// a bad flag prints it on stderr and fails.
package cli

import (
	"bytes"
	"errors"
	"flag"
	"io"
)

// ErrHelpShown is returned by Parse once -h or -help printed the usage:
// the command should exit 0.
var ErrHelpShown = errors.New("help shown")

// Parse parses args into fs. The usage goes to stdout for -h or -help
// (then the error is ErrHelpShown) and to stderr with a parse error,
// which Parse returns.
func Parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	var out bytes.Buffer
	fs.SetOutput(&out)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		_, _ = stdout.Write(out.Bytes())
		return ErrHelpShown
	case err != nil:
		_, _ = stderr.Write(out.Bytes())
	}
	return err
}

// Exit returns the exit status for a command's error: 0 for none or for
// ErrHelpShown, else 1.
func Exit(err error) int {
	if err == nil || errors.Is(err, ErrHelpShown) {
		return 0
	}
	return 1
}
