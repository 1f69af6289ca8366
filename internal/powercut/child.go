package powercut

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// childEnv, when set in a process's environment, makes that process a
// filesystem server for its parent (see [MountInChild]) instead of what it
// was built to be. It holds the child's childArgs as JSON.
const childEnv = "BATCHKV_POWERCUT_CHILD"

// childArgs tell a child what to mount.
type childArgs struct {
	Dir, Backing string
	Mode         Mode
}

// childReply is the child's answer to one request, a line of JSON.
type childReply struct {
	Report CutReport `json:",omitempty"`
	Err    string    `json:",omitempty"`
}

// init turns a process started by MountInChild into the filesystem's
// server: it runs before the program's own code and never returns to it.
func init() {
	if v, ok := os.LookupEnv(childEnv); ok {
		os.Exit(serveChild(v, os.Stdin, os.Stdout))
	}
}

// ChildFS is a power-cut filesystem served by a child process. Serving a
// FUSE mount from the process that also uses it can hang that process for
// good: a thread faulting on a memory-mapped file of the mount waits on the
// kernel, the Go runtime then cannot stop it for a garbage collection, and
// the collection stops the goroutines that would answer the fault. A child
// has its own runtime, so nothing the parent does can stop it.
type ChildFS struct {
	dir  string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	done bool
}

// MountInChild mounts a new, empty filesystem at dir, served by a copy of
// the running program (os.Args[0]) that keeps the files' contents in
// backing. The caller must call Unmount. The child unmounts and exits when
// its parent dies (its standard input closes).
func MountInChild(dir, backing string, mode Mode) (*ChildFS, error) {
	args, err := json.Marshal(childArgs{Dir: dir, Backing: backing, Mode: mode})
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+string(args))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("powercut: start the filesystem's process: %w", err)
	}
	c := &ChildFS{dir: dir, cmd: cmd, in: in, out: bufio.NewReader(out)}
	if _, err := c.read(); err != nil { // the child's first line: mounted, or why not
		c.kill()
		return nil, err
	}
	return c, nil
}

// Dir returns the mount point.
func (c *ChildFS) Dir() string { return c.dir }

// Cut cuts the power, as [FS.Cut] does.
func (c *ChildFS) Cut() (CutReport, error) {
	if c.done {
		return CutReport{}, errors.New("powercut: not mounted")
	}
	if _, err := io.WriteString(c.in, "cut\n"); err != nil {
		return CutReport{}, fmt.Errorf("powercut: the filesystem's process: %w", err)
	}
	return c.read()
}

// Unmount unmounts the filesystem and waits for its process to exit; if it
// has not within 10 seconds, it kills the process and detaches the mount.
// It is idempotent.
func (c *ChildFS) Unmount() error {
	if c.done {
		return nil
	}
	c.done = true
	_ = c.in.Close() // the child unmounts and exits on the end of its input
	exited := make(chan error, 1)
	go func() { exited <- c.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			return fmt.Errorf("powercut: the filesystem's process: %w", err)
		}
		return nil
	case <-time.After(10 * time.Second):
		c.kill()
		<-exited
		return errors.New("powercut: the filesystem's process did not exit; killed it and detached the mount")
	}
}

// kill kills the child by its PID and detaches its mount.
func (c *ChildFS) kill() {
	c.done = true
	_ = c.cmd.Process.Kill()
	_ = syscall.Unmount(c.dir, syscall.MNT_DETACH)
}

func (c *ChildFS) read() (CutReport, error) {
	line, err := c.out.ReadBytes('\n')
	if err != nil {
		return CutReport{}, fmt.Errorf("powercut: the filesystem's process went away: %w", err)
	}
	var r childReply
	if err := json.Unmarshal(line, &r); err != nil {
		return CutReport{}, fmt.Errorf("powercut: the filesystem's process said %q: %w", line, err)
	}
	if r.Err != "" {
		return r.Report, errors.New(r.Err)
	}
	return r.Report, nil
}

// serveChild mounts what args say and answers requests, one per line of
// in ("cut"), with a line of JSON on out, until in ends. It returns the
// process's exit status.
func serveChild(args string, in io.Reader, out io.Writer) int {
	enc := json.NewEncoder(out)
	var a childArgs
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		_ = enc.Encode(childReply{Err: "powercut: bad " + childEnv + ": " + err.Error()})
		return 2
	}
	f, err := Mount(a.Dir, a.Backing, a.Mode)
	if err != nil {
		_ = enc.Encode(childReply{Err: err.Error()})
		return 1
	}
	defer func() { _ = f.Unmount() }()
	if err := enc.Encode(childReply{}); err != nil {
		return 1
	}
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		var r childReply
		switch req := strings.TrimSpace(lines.Text()); req {
		case "cut":
			rep, err := f.Cut()
			r.Report = rep
			if err != nil {
				r.Err = err.Error()
			}
		default:
			r.Err = fmt.Sprintf("powercut: unknown request %q", req)
		}
		if err := enc.Encode(r); err != nil {
			return 1
		}
	}
	return 0
}
