package procs

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A server's port is free between the harness's pick and the server's
// start, and between a kill and the restart. go test runs packages side
// by side, and any of their listeners or outgoing connections may take
// such a port; a server of another test that took it would then answer
// in this cluster's name. So a spare's port stays held (listened on, as
// nothing dials a spare before it starts) until the spare's start, and a
// start counts only once the port answers from the started process
// itself. A killed server's port is not held: a listener there would
// accept its peers' connections where they must be refused.

// releasePort closes server i's held listener, if any, so that the
// server can listen there.
func (c *Servers) releasePort(i int) {
	c.mu.Lock()
	ln := c.held[i]
	delete(c.held, i)
	c.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
}

// releasePorts closes every held listener.
func (c *Servers) releasePorts() {
	for i := range c.Addrs {
		c.releasePort(i)
	}
}

// listensAt reports whether process pid holds the socket that listens on
// addr's port (Linux: /proc/net/tcp and tcp6, then the process's fds).
func listensAt(pid int, addr string) (bool, error) {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return false, fmt.Errorf("chaos: port of %s: %w", addr, err)
	}
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if err := listeningInodes(table, uint16(port), inodes); err != nil {
			return false, err
		}
	}
	if len(inodes) == 0 {
		return false, nil
	}
	fdDir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	fds, err := os.ReadDir(fdDir)
	if os.IsNotExist(err) {
		return false, nil // the process is gone
	}
	if err != nil {
		return false, err
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if err != nil {
			continue // closed since the listing
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok && inodes[strings.TrimSuffix(inode, "]")] {
			return true, nil
		}
	}
	return false, nil
}

// listenStateHex is a listening socket's state in /proc/net/tcp.
const listenStateHex = "0A"

// listeningInodes adds to inodes the inode of each socket in table (a
// /proc/net/tcp file) that listens on port.
func listeningInodes(table string, port uint16, inodes map[string]bool) error {
	f, err := os.Open(table)
	if os.IsNotExist(err) {
		return nil // no IPv6 on this machine
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != listenStateHex {
			continue
		}
		_, hexPort, ok := strings.Cut(fields[1], ":")
		if !ok {
			continue
		}
		if p, err := strconv.ParseUint(hexPort, 16, 16); err == nil && uint16(p) == port {
			inodes[fields[9]] = true
		}
	}
	return sc.Err()
}
