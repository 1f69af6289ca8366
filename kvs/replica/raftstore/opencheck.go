package raftstore

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"go.etcd.io/bbolt"

	"github.com/batchkv/batchkv/internal/bugswitch"
	"github.com/batchkv/batchkv/kvs/replica/durablefs"
)

// A shard's data dir holds, besides its log and snapshots:
//
//   - checksumsMark, once every entry of its log carries a checksum: a
//     log made by this code has it from the start; a log made before
//     checksums gets it once the entries without one have been trimmed.
//     Until then, entries without a checksum are read unchecked.
//   - rebuildMark while the replica is being rebuilt from its peers
//     after damage: it holds the last index the damaged log had, and the
//     replica refuses to vote until its new log reaches it (see
//     Group.rebuilt).
const (
	checksumsMark = "log-checksums"
	rebuildMark   = "rebuilding"
	snapshotsDir  = "snapshots"
)

// openCheckedLog opens the shard's log (openLogStore) and wraps it in
// checksums. A log that its store cannot open because it is damaged is
// a *CorruptError.
func openCheckedLog(dir string, format LogFormat, noSync bool, hlog hclog.Logger) (*checkedLog, error) {
	had, err := formatOnDisk(dir)
	if err != nil {
		return nil, err
	}
	_, markErr := os.Stat(filepath.Join(dir, checksumsMark))
	s, err := openLogStore(dir, format, noSync, hlog)
	if err != nil {
		if errors.Is(err, wal.ErrCorrupt) || errors.Is(err, bbolt.ErrInvalid) || errors.Is(err, bbolt.ErrChecksum) {
			return nil, &CorruptError{File: logPath(dir, format), Detail: "the log does not open: " + err.Error()}
		}
		return nil, err
	}
	c := &checkedLog{Store: s, fileOf: logFiles(dir, format), legacy: had != "" && markErr != nil}
	if had == "" {
		if err := writeMark(dir, checksumsMark, ""); err != nil {
			_ = Close(s)
			return nil, err
		}
	}
	return c, nil
}

// logPath returns the log's file (bolt) or directory (wal) in dir.
func logPath(dir string, format LogFormat) string {
	if format == LogBolt {
		return filepath.Join(dir, boltLogName)
	}
	return filepath.Join(dir, walDirName)
}

// logFiles returns a function that names the file holding a log entry:
// for a WAL, the segment whose base index is the highest at or below it.
func logFiles(dir string, format LogFormat) func(uint64) string {
	if format == LogBolt {
		return func(uint64) string { return filepath.Join(dir, boltLogName) }
	}
	walDir := filepath.Join(dir, walDirName)
	return func(index uint64) string {
		entries, err := os.ReadDir(walDir)
		if err != nil || index == 0 {
			return walDir
		}
		best, bestBase := walDir, uint64(0)
		for _, e := range entries {
			base, _, ok := strings.Cut(e.Name(), "-")
			b, err := strconv.ParseUint(base, 10, 64)
			if ok && err == nil && strings.HasSuffix(e.Name(), ".wal") && b <= index && b >= bestBase {
				best, bestBase = filepath.Join(walDir, e.Name()), b
			}
		}
		return best
	}
}

// writeMark writes a small marker file into dir, synced.
func writeMark(dir, name, content string) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(content)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// checkReplicaData verifies a replica's data before Raft reads it: every
// log entry's checksum, a WAL's tail (checkWALTail), the metadata of every snapshot, the checksum of
// the latest snapshot (the one Raft restores), and that the log goes on
// where that snapshot ends. Raft itself would panic replaying a log with
// a gap after it, when it falls back to an older snapshot because the
// latest is damaged. dir "" is a replica in memory: only the log is read.
func checkReplicaData(dir string, logs *checkedLog, snaps raft.SnapshotStore) error {
	allChecked, err := logs.verifyAll()
	if err != nil {
		return err
	}
	if logs.legacy && allChecked && dir != "" {
		if err := writeMark(dir, checksumsMark, ""); err != nil {
			return err
		}
		logs.legacy = false
	}
	if dir == "" {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, walDirName)); err == nil && !bugswitch.UncheckedData.Load() {
		last, _ := logs.LastIndex()
		if err := checkWALTail(filepath.Join(dir, walDirName), last); err != nil {
			return err
		}
	}
	latest, remnants, err := latestSnapshot(dir)
	if err != nil {
		return err
	}
	if err := removeRemnants(dir, remnants); err != nil {
		return err
	}
	var snapIndex uint64
	if latest != nil {
		state := filepath.Join(dir, snapshotsDir, latest.ID, "state.bin")
		if bugswitch.UncheckedData.Load() {
			state = "" // the planted bug: snapshots unchecked too
		}
		if state != "" {
			_, rc, err := snaps.Open(latest.ID)
			if err != nil {
				return &CorruptError{File: state, Detail: "the snapshot does not open: " + err.Error()}
			}
			_ = rc.Close()
		}
		snapIndex = latest.Index
	}
	first, _ := logs.FirstIndex()
	last, _ := logs.LastIndex()
	if last > 0 && first > snapIndex+1 {
		return &CorruptError{File: logs.fileOf(first), Index: first,
			Detail: fmt.Sprintf("the log starts at entry %d, but the latest snapshot ends at %d", first, snapIndex)}
	}
	return nil
}

// latestSnapshot returns the metadata of the newest snapshot in dir, as
// Raft's file snapshot store orders them, or nil if there is none. A
// snapshot whose metadata does not read is damage (Raft would skip it and
// restore an older one), unless a snapshot that reads is newer: after
// saving a snapshot Raft removes the old ones past those it retains, file
// by file (os.RemoveAll), and a crash in the middle leaves one of them
// without its files. Those remnants are returned by name, with the
// snapshots a crash left half written (<id>.tmp, which Raft ignores and
// never removes).
func latestSnapshot(dir string) (latest *raft.SnapshotMeta, remnants []string, err error) {
	entries, err := os.ReadDir(filepath.Join(dir, snapshotsDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var metas []*raft.SnapshotMeta
	type unreadMeta struct {
		id  string
		err *CorruptError
	}
	var unread []unreadMeta
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if strings.HasSuffix(e.Name(), ".tmp") { // being written when the process ended: never complete
			remnants = append(remnants, e.Name())
			continue
		}
		path := filepath.Join(dir, snapshotsDir, e.Name(), "meta.json")
		raw, err := os.ReadFile(path)
		if err != nil {
			unread = append(unread, unreadMeta{e.Name(), &CorruptError{File: path, Detail: err.Error()}})
			continue
		}
		var m raft.SnapshotMeta
		if err := json.Unmarshal(raw, &m); err != nil || m.ID != e.Name() {
			unread = append(unread, unreadMeta{e.Name(), &CorruptError{File: path, Detail: fmt.Sprintf("snapshot metadata does not read (id %q): %v", m.ID, err)}})
			continue
		}
		metas = append(metas, &m)
	}
	if len(metas) > 0 {
		latest = slices.MaxFunc(metas, func(a, b *raft.SnapshotMeta) int {
			return cmp.Or(cmp.Compare(a.Term, b.Term), cmp.Compare(a.Index, b.Index), cmp.Compare(a.ID, b.ID))
		})
	}
	for _, u := range unread {
		term, index, ok := snapshotOrder(u.id)
		if !ok || latest == nil || cmp.Or(cmp.Compare(term, latest.Term), cmp.Compare(index, latest.Index)) >= 0 {
			return nil, nil, u.err
		}
		remnants = append(remnants, u.id)
	}
	return latest, remnants, nil
}

// snapshotOrder reads the term and index from the ID of a snapshot that
// Raft's file snapshot store made: term-index-milliseconds.
func snapshotOrder(id string) (term, index uint64, ok bool) {
	parts := strings.Split(id, "-")
	if len(parts) != 3 {
		return 0, 0, false
	}
	term, err1 := strconv.ParseUint(parts[0], 10, 64)
	index, err2 := strconv.ParseUint(parts[1], 10, 64)
	return term, index, err1 == nil && err2 == nil
}

// removeRemnants removes what a crash left of snapshots
// (latestSnapshot): Raft's store would skip them, and keep their bytes,
// for good.
func removeRemnants(dir string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	for _, id := range ids {
		if err := os.RemoveAll(filepath.Join(dir, snapshotsDir, id)); err != nil {
			return err
		}
	}
	return durablefs.SyncDir(filepath.Join(dir, snapshotsDir))
}
