package procs

import (
	"errors"
	"fmt"
	"time"
)

// Config describes a local replicated cluster of server processes.
type Config struct {
	// Bin is the kvsserver binary.
	Bin string
	// Dir holds each server's log, and its data dir unless DataRoot is set.
	Dir string
	// DataRoot, if set, holds each server's data dir (data-N).
	DataRoot string
	// Servers is the number of server processes the cluster starts with.
	Servers int
	// Spares are servers started later with -join, after the members in
	// Addrs; RF is the replication factor (0: Servers).
	Spares int
	RF     int
	// Shards of the cluster (0: one per server).
	Shards int
	// Args are extra kvsserver flags for every server.
	Args []string
	// TLS makes every connection mutual TLS: a CA and certificates are
	// made under Dir/certs.
	TLS bool
	// SmallDisks, when set, mounts a tmpfs of that many bytes on every
	// server's data dir (smalldisks.go), so a scenario can fill one.
	SmallDisks int64
}

// startWithin bounds how long a server may take to answer once started.
const startWithin = 15 * time.Second

// Errors of a cluster's configuration.
var (
	// ErrNoBinary is a Config without Bin.
	ErrNoBinary = errors.New("chaos: no kvsserver binary given")
	// ErrNoDir is a Config without Dir.
	ErrNoDir = errors.New("chaos: no directory given for the servers' logs")
	// ErrBadSize is a cluster of no server, of negative spares, shards or
	// tmpfs size, or an RF larger than its servers.
	ErrBadSize = errors.New("chaos: bad cluster size")
)

// validate says what is wrong with c, or nil.
func (c Config) validate() error {
	switch {
	case c.Bin == "":
		return ErrNoBinary
	case c.Dir == "":
		return ErrNoDir
	case c.Servers < 1 || c.Spares < 0 || c.Shards < 0 || c.SmallDisks < 0:
		return fmt.Errorf("%w: %d servers, %d spares, %d shards, %d-byte disks", ErrBadSize, c.Servers, c.Spares, c.Shards, c.SmallDisks)
	case c.RF < 0 || c.RF > c.Servers:
		return fmt.Errorf("%w: RF %d with %d servers", ErrBadSize, c.RF, c.Servers)
	}
	return nil
}
