package procs

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A server's port is free between the harness's pick and the server's
// start, and between a kill and the restart. go test runs packages side
// by side, and any of their listeners or outgoing connections may take
// such a port; a server of another test that took it would then answer
// in this cluster's name. So each server's port is reserved until the
// server's start, by a socket bound to it that does not listen (a caller
// is refused, as by a server that is down) and does not allow reuse (no
// other socket binds there, and no outgoing connection takes it), and a
// start counts only once the port answers from the started process
// itself. A killed server's port is not reserved: its peers'
// connections in TIME_WAIT keep a bind without reuse from taking it.

// portHold is a TCP port on 127.0.0.1 reserved by a bound socket.
type portHold struct{ fd int }

// reservePort binds a socket to a free port on 127.0.0.1, without
// listening, and returns it and its address.
func reservePort() (*portHold, string, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, "", fmt.Errorf("chaos: reserve a port: %w", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		_ = syscall.Close(fd)
		return nil, "", fmt.Errorf("chaos: reserve a port: %w", err)
	}
	sa, err := syscall.Getsockname(fd)
	in4, ok := sa.(*syscall.SockaddrInet4)
	if err != nil || !ok {
		_ = syscall.Close(fd)
		return nil, "", fmt.Errorf("chaos: reserve a port: its address: %v", err)
	}
	return &portHold{fd: fd}, net.JoinHostPort("127.0.0.1", strconv.Itoa(in4.Port)), nil
}

// Close frees the port.
func (h *portHold) Close() error { return syscall.Close(h.fd) }

// releasePort frees server i's reserved port, if any, so that the server
// can listen there.
func (c *Servers) releasePort(i int) {
	c.mu.Lock()
	h := c.held[i]
	delete(c.held, i)
	c.mu.Unlock()
	if h != nil {
		_ = h.Close()
	}
}

// releasePorts frees every reserved port.
func (c *Servers) releasePorts() {
	for i := range c.Addrs {
		c.releasePort(i)
	}
}

// listensAt reports whether process pid holds the socket that listens on
// addr's port (Linux: /proc/net/tcp and tcp6, then the process's fds; an
// error where there is no /proc/net/tcp).
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
	if os.IsNotExist(err) && strings.HasSuffix(table, "6") {
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
