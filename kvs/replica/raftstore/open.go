package raftstore

import (
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/batchkv/batchkv/kvs/replica/diskspace"
	"github.com/batchkv/batchkv/kvs/replica/durablefs"
)

// Open returns a replica's log store (with its term and vote) and its
// snapshot store: files in cfg.Dir, or memory when cfg.Dir is empty.
// Files are checked before they are handed over (checkReplicaData): a
// replica whose data is damaged is a *DamagedError. The log checksums
// every entry it stores and checks every entry it reads, and is reopened
// once space returns after a full disk sealed it (spacelog.go).
func Open(cfg Config) (Store, raft.SnapshotStore, error) {
	if err := cfg.validate(); err != nil {
		return nil, nil, err
	}
	if cfg.Dir == "" {
		return raft.NewInmemStore(), &memSnapshots{}, nil
	}
	hlog := cfg.RaftLogger
	if err := durablefs.MkdirAllDurable(cfg.Dir, DataDirMode); err != nil {
		return nil, nil, fmt.Errorf("replica: shard %d data dir: %w", cfg.Shard, err)
	}
	if err := roomForLog(cfg.Dir); err != nil {
		return nil, nil, fmt.Errorf("replica: shard %d: %w", cfg.Shard, err)
	}
	checked, err := openCheckedLog(cfg.Dir, cfg.Format, cfg.NoSync, hlog)
	if err != nil {
		return nil, nil, fmt.Errorf("replica: shard %d log: %w", cfg.Shard, err)
	}
	snaps, err := openSnapshots(cfg.Dir, snapshotsRetained, hlog)
	if err != nil {
		_ = Close(checked)
		return nil, nil, fmt.Errorf("replica: shard %d snapshots: %w", cfg.Shard, err)
	}
	snaps.log = cfg.Logger.With("shard", cfg.Shard)
	if err := checkReplicaData(cfg.Dir, checked, snaps); err != nil {
		kept := KeepState(checked)
		_ = Close(checked)
		return nil, nil, &DamagedError{Err: err, Kept: kept}
	}
	checked.setOnCorrupt(cfg.OnCorrupt)
	// A log sealed for want of space is reopened, checksums and all, once
	// space returns (spacelog.go).
	reopen := func() (Store, error) {
		l, err := openCheckedLog(cfg.Dir, cfg.Format, cfg.NoSync, hlog)
		if err != nil {
			return nil, err
		}
		l.setOnCorrupt(cfg.OnCorrupt)
		return l, nil
	}
	logs := Store(newSpaceLog(checked, cfg.Dir, cfg.Disk, reopen, cfg.Logger.With("shard", cfg.Shard)))
	return logs, &checkedSnapshots{SnapshotStore: snaps, onCorrupt: cfg.OnCorrupt}, nil
}

// roomForLog returns an error, saying what it needs, if dir holds no Raft
// log yet and has no room for a new one.
func roomForLog(dir string) error {
	if had, err := formatOnDisk(dir); err != nil || had != "" {
		return err
	}
	free, _, err := diskspace.Free(dir)
	if err != nil {
		return err
	}
	if free < firstLogRoom {
		return fmt.Errorf("data dir %s has %d bytes free: a shard's first Raft log segment needs %d (%d MiB)",
			dir, free, uint64(firstLogRoom), firstLogRoom>>20)
	}
	return nil
}
