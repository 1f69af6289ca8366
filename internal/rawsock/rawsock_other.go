//go:build !linux

package rawsock

import "net"

func wrapTCP(tc *net.TCPConn) net.Conn { return tc }
