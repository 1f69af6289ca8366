package raftstore

import (
	"errors"
	"log/slog"

	"github.com/hashicorp/go-hclog"

	"github.com/batchkv/batchkv/kvs/replica/diskspace"
)

// Fixed parameters of a replica's stores.
const (
	// snapshotsRetained is how many snapshots a shard keeps on disk.
	snapshotsRetained = 2
	// DataDirMode is the mode of a shard's data dir and the directories
	// under it: readable by the server's user only.
	DataDirMode = 0o700
	// firstLogRoom is the space a shard's new Raft log takes at once:
	// its first WAL segment, preallocated, and a little for the WAL's
	// metadata.
	firstLogRoom = WALSegmentSize + 1<<20
)

// Config says where and how Open opens a replica's stores.
type Config struct {
	// Shard is the replica's shard, for messages.
	Shard int
	// Dir is the replica's data dir; "" keeps its log and snapshots in
	// memory.
	Dir string
	// Format is how the log is kept in Dir; "" means LogWAL. A Dir that
	// holds a log in the other format does not open.
	Format LogFormat
	// NoSync skips the fsync of log appends (-unsafe-nosync); the term
	// and vote are still synced.
	NoSync bool
	// Disk watches the data dir's space; the log refuses commands while
	// it says so. Nil: never full.
	Disk *diskspace.Watch
	// OnCorrupt is called (once) when a record read while the replica
	// runs fails its check. Nil ignores it.
	OnCorrupt func(error)
	// Logger receives the log's out-of-space and mended messages. Nil
	// discards them.
	Logger *slog.Logger
	// RaftLogger is handed to raft-wal, raft-boltdb and the snapshot
	// store. Nil discards what they log.
	RaftLogger hclog.Logger
}

// errNegativeShard says Config.Shard is below 0.
var errNegativeShard = errors.New("raftstore: a negative shard number")

// validate fills cfg's defaults and rejects what cannot work.
func (cfg *Config) validate() error {
	if cfg.Shard < 0 {
		return errNegativeShard
	}
	if _, err := ParseLogFormat(string(cfg.Format)); err != nil {
		return err
	}
	if cfg.OnCorrupt == nil {
		cfg.OnCorrupt = func(error) {}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RaftLogger == nil {
		cfg.RaftLogger = hclog.NewNullLogger()
	}
	return nil
}
