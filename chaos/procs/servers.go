// Package procs runs a local cluster of kvsserver processes for the chaos
// harness: every shard replicated on them, their Raft links through
// toxiproxy proxies (internal/faultnet), optionally with mutual TLS and a
// small tmpfs under each data dir; it starts, signals, kills and restarts
// them by PID.
package procs

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/batchkv/batchkv/client"
	"github.com/batchkv/batchkv/internal/faultnet"
	"github.com/batchkv/batchkv/wire"
)

// Servers is n kvsserver processes on loopback, every shard replicated
// on RF of them, with their Raft links through Links.
type Servers struct {
	cfg Config
	// Addrs are every server's address: the members, then the spares.
	Addrs []string
	// Links are the toxiproxy proxies of the Raft links between them.
	Links *faultnet.Links
	// Admin reaches the servers' admin RPCs; with TLS as a node, which may
	// ask for content digests.
	Admin client.Admin
	// ClientTLS is what the loads dial with: a client certificate with TLS,
	// nil without.
	ClientTLS *tls.Config
	tlsArgs   []string // the servers' TLS flags

	mounted []string // the data dirs with a tmpfs of mountSmallDisks

	mu      sync.Mutex
	procs   []*exec.Cmd // nil while a server is down
	exits   []chan struct{}
	retired map[int]bool      // servers removed from the cluster and stopped for good
	held    map[int]*portHold // servers' ports until their start (ports.go)
}

// Start starts every server of cfg but the spares, and waits until each
// answers.
func Start(cfg Config) (*Servers, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.RF == 0 {
		cfg.RF = cfg.Servers
	}
	n := cfg.Servers + cfg.Spares
	c := &Servers{cfg: cfg, procs: make([]*exec.Cmd, n), exits: make([]chan struct{}, n), retired: map[int]bool{},
		held: map[int]*portHold{}}
	if cfg.TLS {
		if err := c.makeCerts(); err != nil {
			return nil, err
		}
	}
	// Every server's port is reserved until that server starts, so that
	// no proxy or other process takes it (ports.go).
	for range n {
		h, addr, err := reservePort()
		if err != nil {
			c.releasePorts()
			return nil, err
		}
		c.held[len(c.Addrs)] = h
		c.Addrs = append(c.Addrs, addr)
	}
	var err error
	if c.Links, err = faultnet.NewLinks(c.Addrs); err != nil {
		c.releasePorts()
		return nil, err
	}
	if cfg.SmallDisks > 0 {
		if err := c.mountSmallDisks(); err != nil {
			c.Close()
			return nil, err
		}
	}
	for i := range cfg.Servers {
		if err := c.Start(i); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// args returns server i's command line.
func (c *Servers) args(i int) []string {
	_, port, _ := net.SplitHostPort(c.Addrs[i])
	members := []string{"-peers", strings.Join(c.Members(), ",")}
	if i >= c.cfg.Servers {
		members = []string{"-join", c.joinVia()}
	}
	a := []string{"-host", "127.0.0.1", "-port", port, "-self", c.Addrs[i]}
	a = append(a, members...)
	a = append(a, "-rf", strconv.Itoa(c.cfg.RF), "-shards", strconv.Itoa(c.cfg.Shards), "-report", "0",
		"-data-dir", c.DataDir(i), "-raft-via", c.Links.Via(i, c.Addrs))
	a = append(a, c.tlsArgs...)
	return append(a, c.cfg.Args...)
}

// joinVia is the member a spare joins through: the first that runs and
// is not retired (replace-dead kills server 0 for good), else server 0.
func (c *Servers) joinVia() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for j := range c.cfg.Servers {
		if c.procs[j] != nil && !c.retired[j] {
			return c.Addrs[j]
		}
	}
	return c.Addrs[0]
}

// Start (re)starts server i with the same flags and data dir, and waits
// until it answers admin calls.
func (c *Servers) Start(i int) error {
	logf, err := os.OpenFile(filepath.Join(c.cfg.Dir, fmt.Sprintf("server-%d.log", i)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.cfg.Bin, c.args(i)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	c.releasePort(i)
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("chaos: start server %d: %w", i, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(exited)
	}()
	c.mu.Lock()
	c.procs[i], c.exits[i] = cmd, exited
	c.mu.Unlock()
	deadline := time.Now().Add(startWithin)
	for {
		if _, err := c.Admin.Status(c.Addrs[i], wire.StatusRequest{}, 500*time.Millisecond); err == nil {
			// Another process may answer there: then this one
			// exits, as its port is taken.
			own, err := listensAt(cmd.Process.Pid, c.Addrs[i])
			if err != nil {
				_ = c.stop(i, syscall.SIGKILL, 0)
				return err
			}
			if own {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("chaos: server %d exited at start; see %s", i, logf.Name())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("chaos: server %d does not answer after 15s", i)
		}
	}
}

// Members returns the addresses of the servers the cluster started with
// (the spares follow them in Addrs).
func (c *Servers) Members() []string { return c.Addrs[:c.cfg.Servers] }

// Retire stops server i for good, once it has been removed from the
// cluster or killed for good (replace-dead): healing does not restart it.
func (c *Servers) Retire(i int) error {
	c.mu.Lock()
	c.retired[i] = true
	c.mu.Unlock()
	return c.stop(i, syscall.SIGTERM, 5*time.Second)
}

// Retired reports whether server i was retired.
func (c *Servers) Retired(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.retired[i]
}

// Pid returns server i's process id, or 0 while it is down.
func (c *Servers) Pid(i int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.procs[i] == nil {
		return 0
	}
	return c.procs[i].Process.Pid
}

// Signal sends sig to server i's process.
func (c *Servers) Signal(i int, sig syscall.Signal) error {
	c.mu.Lock()
	cmd := c.procs[i]
	c.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("chaos: server %d is down", i)
	}
	return cmd.Process.Signal(sig)
}

// Kill kills server i with SIGKILL and waits until it is gone.
func (c *Servers) Kill(i int) error { return c.stop(i, syscall.SIGKILL, 0) }

// KillAll sends SIGKILL to every running server first and then waits for
// each: all die at (nearly) the same instant, as in a power cut.
func (c *Servers) KillAll() {
	c.mu.Lock()
	var exits []chan struct{}
	for i, cmd := range c.procs {
		if cmd != nil {
			_ = cmd.Process.Kill()
			exits = append(exits, c.exits[i])
			c.procs[i] = nil
		}
	}
	c.mu.Unlock()
	for _, e := range exits {
		<-e
	}
}

// stop sends sig to server i, waits for it to exit, and kills it after
// grace (0: wait for ever).
func (c *Servers) stop(i int, sig syscall.Signal, grace time.Duration) error {
	c.mu.Lock()
	cmd, exited := c.procs[i], c.exits[i]
	c.procs[i] = nil
	c.mu.Unlock()
	if cmd == nil {
		return nil
	}
	// A stopped process does not act on SIGTERM until it runs again.
	_ = cmd.Process.Signal(syscall.SIGCONT)
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	if grace > 0 {
		select {
		case <-exited:
			return nil
		case <-time.After(grace):
			_ = cmd.Process.Kill()
		}
	}
	<-exited
	return nil
}

// Close stops every server (SIGTERM, then SIGKILL after 5s) and the links.
func (c *Servers) Close() {
	var wg sync.WaitGroup
	for i := range c.Addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.stop(i, syscall.SIGTERM, 5*time.Second)
		}()
	}
	wg.Wait()
	c.releasePorts()
	c.unmountSmallDisks()
	if c.Links != nil {
		c.Links.Close()
	}
}
