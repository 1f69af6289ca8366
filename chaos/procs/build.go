package procs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// RunWithServerBinary builds cmd/kvsserver into a temporary directory,
// sets *bin to its path, runs m (a *testing.M: the package's TestMain
// calls it) and removes the directory. It returns m's exit code, or 1 when
// the build fails.
func RunWithServerBinary(m interface{ Run() int }, bin *string) int {
	dir, err := os.MkdirTemp("", "batchkv-server-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	*bin = filepath.Join(dir, "kvsserver")
	if out, err := exec.Command("go", "build", "-o", *bin, "github.com/batchkv/batchkv/cmd/kvsserver").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building kvsserver: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}
