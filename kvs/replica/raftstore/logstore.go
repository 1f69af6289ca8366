package raftstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/batchkv/batchkv/kvs/replica/durablefs"
	"github.com/batchkv/batchkv/kvs/replica/raftstore/walfiles"
)

// LogFormat is how a replica keeps its Raft log, term and vote on disk.
type LogFormat string

const (
	// LogWAL keeps the log in append-only segment files
	// (hashicorp/raft-wal): an append is one write and one fsync. The
	// default.
	LogWAL LogFormat = "wal"
	// LogBolt keeps the log in a BoltDB B+tree (hashicorp/raft-boltdb):
	// an append copies the entry into pages and syncs them, then the meta
	// page. It costs the servers about 10% more CPU per op at RF=3.
	LogBolt LogFormat = "bolt"
)

// LogFormats lists the formats, the default first.
var LogFormats = []LogFormat{LogWAL, LogBolt}

// ParseLogFormat returns the format s names; "" is the default, LogWAL.
func ParseLogFormat(s string) (LogFormat, error) {
	if s == "" {
		return LogWAL, nil
	}
	for _, f := range LogFormats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("raft log format %q: want one of %v", s, LogFormats)
}

// The files that mark each format in a shard's data dir.
const (
	walDirName  = "wal"
	boltLogName = "raft.db"
)

// WALSegmentSize is the size of one segment file of a WAL log, allocated
// when the segment is created. A shard's log under the standard load
// grows by about 5 MB/s, and a snapshot lets it drop whole segments.
const WALSegmentSize = 16 << 20

// Store is where a replica keeps its Raft log and its term and vote:
// files in its shard's data dir, or memory for a replica without one.
type Store interface {
	raft.LogStore
	raft.StableStore
}

// formatOnDisk returns the format of the log already in dir, or "" when
// dir holds none.
func formatOnDisk(dir string) (LogFormat, error) {
	var found []LogFormat
	for f, name := range map[LogFormat]string{LogWAL: walDirName, LogBolt: boltLogName} {
		switch _, err := os.Stat(filepath.Join(dir, name)); {
		case err == nil:
			found = append(found, f)
		case !errors.Is(err, os.ErrNotExist):
			return "", err
		}
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%s holds both a %s and a %s Raft log", dir, walDirName, boltLogName)
}

// openLogStore opens the Raft log of the shard whose data dir is dir, in
// format ("" is LogWAL), creating it if dir holds none. A dir that holds
// a log in the other format is an error, and is left as it was: the
// server must be started with that format (or the dir moved away).
func openLogStore(dir string, format LogFormat, noSync bool, hlog hclog.Logger) (Store, error) {
	format, err := ParseLogFormat(string(format))
	if err != nil {
		return nil, err
	}
	had, err := formatOnDisk(dir)
	if err != nil {
		return nil, err
	}
	if had != "" && had != format {
		return nil, fmt.Errorf("%s holds a %s Raft log, not %s: start the server with -raft-log %s", dir, had, format, had)
	}
	if format == LogBolt {
		bs, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, boltLogName), NoSync: noSync, BoltOptions: boltOptions()})
		if err != nil {
			return nil, err
		}
		if err := durablefs.SyncDir(dir); err != nil { // raft.db's entry
			_ = bs.Close()
			return nil, err
		}
		if noSync {
			return syncedVote{bs}, nil
		}
		return bs, nil
	}
	walDir := filepath.Join(dir, walDirName)
	if err := durablefs.MkdirAllDurable(walDir, DataDirMode); err != nil {
		return nil, err
	}
	w, err := walfiles.Open(walDir, WALSegmentSize, noSync, hlog.Named("wal"))
	if err != nil {
		return nil, err
	}
	// The WAL's meta file (term and vote) is synced, its name is not
	// (the first segment's sync does that, never under -unsafe-nosync).
	if err := durablefs.SyncDir(walDir); err != nil {
		_ = w.Close()
		return nil, err
	}
	return w, nil
}

// Close closes a log store that holds files.
func Close(s Store) error {
	if c, ok := s.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// boltOptions are the options of a replica's BoltDB log. The log's pages
// churn: every entry is appended, then deleted once a snapshot covers it,
// so the file holds many free pages, and BoltDB by default writes the
// whole list of them at every commit. With NoFreelistSync it writes none
// and rebuilds the list by scanning the file when it opens; the map
// freelist finds runs of free pages without sorting the list.
// BenchmarkLogStore measures the difference (about a quarter of the log's
// CPU per entry). Entries are as durable either way: a commit still syncs
// its pages and then its meta page.
func boltOptions() *bbolt.Options {
	return &bbolt.Options{NoFreelistSync: true, FreelistType: bbolt.FreelistMapType}
}
